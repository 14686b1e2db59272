// Cross-process lease wake-ups over Redis pub/sub: a release publishes on the member
// `<family>:<conversation id>` of a channel family; every process listens to the whole family and
// wakes its local waiters. Pub/sub is at-most-once: a lost message only means a waiter falls back
// to its poll, never a wrong admission (the lease row in SQLite is the truth). The releases of one
// pass of the event loop go out as one message (their ids, one per line): under load a process
// releases many leases at once, and every process hears every message. A message opens with its
// sender's tag, and a notifier ignores its own: the store that released has woken its waiters in
// this thread already, and an echo heard a Redis round trip later woke them again for nothing (a
// lease waiter tried the lease once more; an outcome waiter read a row that a later turn may have
// just completed, ahead of that turn's own handover).
import { randomBytes } from "node:crypto";
import type { Redis } from "ioredis";
import type { LeaseReleaseNotifier } from "../state/types.js";
import { Listeners } from "./listeners.js";
import { PubSubChannel } from "./pubsub-channel.js";

/** Between the ids of one release message (an id holding one would only miss its wake-up: its waiters poll). */
const RELEASE_SEPARATOR = "\n";

export interface RedisLeaseNotifierOptions {
  /** Publish or subscribe failures (the caller decides whether to log). Default: ignored. */
  onError?: (err: Error) => void;
}

export class RedisLeaseNotifier implements LeaseReleaseNotifier {
  private readonly channel: PubSubChannel;
  private readonly listeners: Listeners<string>;
  private readonly onError: (err: Error) => void;
  private readonly subscribed: Promise<void>;
  private closed = false;
  /** Released since the last publish, in order: sent at the end of this pass of the event loop. */
  private released: string[] = [];
  /** This notifier's tag, the first line of each message it sends. */
  private readonly tag = randomBytes(8).toString("hex");

  /**
   * @param publisher commands connection (PUBLISH); never closed here.
   * @param subscriber a connection in subscriber mode (it may be shared with other pub/sub users);
   *   when null, `publisher.duplicate()` is created, owned and closed by close().
   * @param channelFamily the family of release channels (`RedisKeys.leaseReleased`).
   */
  constructor(publisher: Redis, subscriber: Redis | null | undefined, channelFamily: string, options: RedisLeaseNotifierOptions = {}) {
    this.onError = options.onError ?? (() => undefined);
    this.listeners = new Listeners((err) => this.onError(err instanceof Error ? err : new Error(String(err))));
    this.channel = new PubSubChannel({ redis: publisher, subscriber, name: channelFamily, family: true, onMessage: (message) => this.heard(message) });
    this.subscribed = this.channel.listen().catch((err: Error) => this.onError(err));
  }

  /** Resolves once the subscription is in place (tests and start-up wait on it). */
  ready(): Promise<void> {
    return this.subscribed;
  }

  publishRelease(conversationId: string): void {
    if (this.closed) return;
    this.released.push(conversationId);
    if (this.released.length === 1) setImmediate(() => this.publishReleased());
  }

  private publishReleased(): void {
    const ids = [...new Set(this.released)];
    this.released = [];
    if (this.closed || ids.length === 0) return;
    // On the first id's member of the family: every process hears the whole family anyway.
    this.channel.publish([this.tag, ...ids].join(RELEASE_SEPARATOR), ids[0]).catch((err: Error) => this.onError(err));
  }

  private heard(message: string): void {
    const [sender, ...ids] = message.split(RELEASE_SEPARATOR);
    if (sender === this.tag) return;
    for (const id of ids) if (id !== "") this.listeners.emit(id);
  }

  onRelease(listener: (conversationId: string) => void): () => void {
    return this.listeners.add(listener);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    // Releases of this last pass still go out: other processes' waiters need not wait for their poll.
    this.publishReleased();
    this.closed = true;
    this.listeners.clear();
    await this.channel.close();
  }
}
