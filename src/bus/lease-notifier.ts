// Cross-process lease wake-ups over Redis pub/sub: a release publishes on
// `<prefix>:<conversation id>`; every process pattern-subscribes to `<prefix>:*` and wakes its
// local waiters. Pub/sub is at-most-once: a lost message only means a waiter falls back to its
// poll, never a wrong admission (the lease row in SQLite is the truth).
import type { Redis } from "ioredis";
import type { LeaseReleaseNotifier } from "../state/types.js";

export interface RedisLeaseNotifierOptions {
  /** Publish or subscribe failures (the caller decides whether to log). Default: ignored. */
  onError?: (err: Error) => void;
}

/** Escape Redis glob characters so the prefix matches only itself in PSUBSCRIBE. */
function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, (char) => `\\${char}`);
}

export class RedisLeaseNotifier implements LeaseReleaseNotifier {
  private readonly subscriber: Redis;
  private readonly ownsSubscriber: boolean;
  private readonly channelPrefix: string;
  private readonly pattern: string;
  private readonly listeners = new Set<(conversationId: string) => void>();
  private readonly onError: (err: Error) => void;
  private readonly subscribed: Promise<void>;
  private closed = false;

  /**
   * @param publisher commands connection (PUBLISH); never closed here.
   * @param subscriber a connection in subscriber mode (it may be shared with other pub/sub users);
   *   when null, `publisher.duplicate()` is created, owned and closed by close().
   * @param channelPrefix channels are `<channelPrefix>:<conversation id>`.
   */
  constructor(
    private readonly publisher: Redis,
    subscriber: Redis | null | undefined,
    channelPrefix: string,
    options: RedisLeaseNotifierOptions = {},
  ) {
    this.ownsSubscriber = !subscriber;
    this.subscriber = subscriber ?? publisher.duplicate();
    this.channelPrefix = channelPrefix;
    this.pattern = `${escapeGlob(channelPrefix)}:*`;
    this.onError = options.onError ?? (() => undefined);
    this.subscriber.on("pmessage", this.handleMessage);
    this.subscribed = this.subscriber.psubscribe(this.pattern).then(
      () => undefined,
      (err: Error) => this.onError(err),
    );
  }

  /** Resolves once the subscription is in place (tests and start-up wait on it). */
  ready(): Promise<void> {
    return this.subscribed;
  }

  publishRelease(conversationId: string): void {
    if (this.closed) return;
    this.publisher.publish(`${this.channelPrefix}:${conversationId}`, conversationId).catch((err: Error) => this.onError(err));
  }

  onRelease(listener: (conversationId: string) => void): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.listeners.clear();
    this.subscriber.off("pmessage", this.handleMessage);
    if (this.ownsSubscriber) {
      this.subscriber.disconnect();
      return;
    }
    await this.subscriber.punsubscribe(this.pattern).catch((err: Error) => this.onError(err));
  }

  private readonly handleMessage = (pattern: string, _channel: string, conversationId: string): void => {
    if (pattern !== this.pattern) return;
    for (const listener of [...this.listeners]) {
      try {
        listener(conversationId);
      } catch (err) {
        this.onError(err instanceof Error ? err : new Error(String(err)));
      }
    }
  };
}
