// Retry-After windows a platform gave one process, shared with every gateway process: a 429 on a
// streamed preview in one worker also holds back the next post to that destination from any
// other. Each platform's windows stay synchronous and local; a window that opens here is
// announced over Redis pub/sub, and every process applies the announcement to its own copy.
// Pub/sub is at-most-once: a lost announcement only means that process meets the 429 itself once.
import type { Redis } from "ioredis";
import type { Logger } from "pino";
import { z } from "zod";
import { PubSubChannel } from "./pubsub-channel.js";

/** Destinations remembered at most; expired entries are dropped first. */
const MAX_ENTRIES = 10_000;

/** Told when a window opens here (e.g. to tell other processes); epoch ms. */
export type WindowOpened = (key: string, untilMs: number) => void;

/** Per destination: the time until which the platform asked us to wait. */
export class RateLimitWindows {
  private readonly until = new Map<string, number>();

  constructor(
    private readonly now: () => number = Date.now,
    private readonly onOpened: WindowOpened | null = null,
  ) {}

  /** The platform asked to wait `retryAfterMs` before the next request to `key`. */
  open(key: string, retryAfterMs: number): void {
    const untilMs = this.now() + retryAfterMs;
    this.closeUntil(key, untilMs);
    this.onOpened?.(key, untilMs);
  }

  /** Hold `key` back until `untilMs` (epoch ms), as another process asked; never shortens a wait. */
  closeUntil(key: string, untilMs: number): void {
    if (untilMs <= this.now()) return;
    if (this.until.size >= MAX_ENTRIES) this.prune();
    this.until.set(key, Math.max(this.until.get(key) ?? 0, untilMs));
  }

  /** Milliseconds left in `key`'s window; 0 when requests may go. */
  msLeft(key: string): number {
    const until = this.until.get(key);
    if (until === undefined) return 0;
    const left = until - this.now();
    if (left > 0) return left;
    this.until.delete(key);
    return 0;
  }

  private prune(): void {
    const now = this.now();
    for (const [key, until] of this.until) if (until <= now) this.until.delete(key);
    // Still full: forget the oldest entries (Map keeps insertion order).
    for (const key of this.until.keys()) {
      if (this.until.size < MAX_ENTRIES) break;
      this.until.delete(key);
    }
  }
}

export interface SharedRateLimitsOptions {
  redis: Redis;
  /** A pub/sub connection (shared with the other buses; not closed here). */
  subscriber: Redis;
  /** `RedisKeys.rateLimitsChannel`. */
  channel: string;
  logger?: Logger;
}

const Announcement = z.object({ scope: z.string(), key: z.string(), untilMs: z.number() });

export class SharedRateLimits {
  private readonly scopes = new Map<string, RateLimitWindows>();
  private readonly channel: PubSubChannel;

  private constructor(private readonly options: SharedRateLimitsOptions) {
    this.channel = new PubSubChannel({ redis: options.redis, subscriber: options.subscriber, name: options.channel, onMessage: this.onMessage });
  }

  static async start(options: SharedRateLimitsOptions): Promise<SharedRateLimits> {
    const shared = new SharedRateLimits(options);
    await shared.channel.listen();
    return shared;
  }

  /** The windows of one platform (its keys are that platform's destinations). */
  windows(scope: string): RateLimitWindows {
    let windows = this.scopes.get(scope);
    if (!windows) {
      windows = new RateLimitWindows(Date.now, (key, untilMs) => this.announce(scope, key, untilMs));
      this.scopes.set(scope, windows);
    }
    return windows;
  }

  close(): Promise<void> {
    return this.channel.close();
  }

  private announce(scope: string, key: string, untilMs: number): void {
    this.channel.publish(JSON.stringify({ scope, key, untilMs })).catch((err: Error) => {
      this.options.logger?.warn({ err: err.message }, "rate limits: could not tell the other processes");
    });
  }

  private readonly onMessage = (message: string): void => {
    let parsed: z.infer<typeof Announcement>;
    try {
      parsed = Announcement.parse(JSON.parse(message));
    } catch {
      this.options.logger?.warn("rate limits: unreadable announcement ignored");
      return;
    }
    // Our own announcements come back too; closeUntil never shortens a wait, so that is harmless.
    this.windows(parsed.scope).closeUntil(parsed.key, parsed.untilMs);
  };
}
