// Interrupt requests across processes: every process hears every request and the one running
// that session's turn acts on it.
//
// publish() appends the request to a short Redis Stream (RedisKeys.interruptLog) and publishes
// it, with its stream id, on RedisKeys.interruptChannel, in one script, so the channel order is the log
// order. A bus delivers the requests logged after its first onInterrupt() call in that order and
// at most once each (ids at or below the last one delivered are skipped): live over pub/sub and,
// when its subscriber connection comes back after a drop, by reading the log after the last id
// it delivered. A request is therefore delivered exactly once unless that catch-up cannot see it:
//   - it is more than `catchUpWindowMs` old by then (30 s by default, by the Redis clock): a stop
//     that late is more likely to hit a newer turn than the one it was meant for;
//   - the log no longer holds it (it keeps about the last 1000 requests and expires the window
//     plus 60 s after its newest one), or the catch-up read failed (logged).
//
// A request applies to the turns running when it is delivered: one delivered live does not reach
// a turn that starts later. A caught-up one carries its age (`ageMs`, by the Redis clock), so the
// turn workers skip turns that began after it was published (turn-worker.ts, isInterruptFor).
import type { Redis } from "ioredis";
import type { Logger } from "pino";
import type { InterruptPublisher, InterruptRequest } from "./types.js";
import { CatchUpFeed } from "./event-bus.js";
import { InterruptLog, parseChannelMessage, type LoggedInterrupt } from "./interrupt-log.js";
import { RedisKeys } from "./keys.js";
import { Listeners } from "./listeners.js";
import { SubscriberLink } from "./subscriber-link.js";

export interface InterruptBusOptions {
  /** Commands connection (EVALSHA, XRANGE). Not closed by the bus. */
  redis: Redis;
  /** Pub/sub connection; when omitted, created by `redis.duplicate()` and closed on close(). */
  subscriber?: Redis;
  /** The deployment's key prefix (its names: RedisKeys). */
  prefix: string;
  /** After a reconnect, requests older than this are not delivered. Default 30 s. */
  catchUpWindowMs?: number;
  logger?: Logger;
}

export type InterruptListener = (request: InterruptRequest) => void;

const DEFAULT_CATCH_UP_WINDOW_MS = 30_000;
/** How long the log outlives its newest request: past the window, nothing in it is read again. */
const LOG_TTL_BEYOND_WINDOW_SECONDS = 60;

export class InterruptBus implements InterruptPublisher {
  /** Created on first onInterrupt() when not given: a publish-only process opens no extra connection. */
  private readonly link: SubscriberLink;
  private readonly channel: string;
  private readonly log: InterruptLog;
  private readonly catchUpWindowMs: number;
  private readonly logger: Logger | undefined;
  private readonly listeners: Listeners<InterruptRequest>;
  /** Orders and deduplicates what this bus delivers; set once listening has begun. */
  private feed: CatchUpFeed<LoggedInterrupt> | null = null;
  private listening: Promise<void> | null = null;
  private disconnected = false;
  private closed = false;

  constructor(options: InterruptBusOptions) {
    const keys = new RedisKeys(options.prefix);
    this.channel = keys.interruptChannel;
    this.catchUpWindowMs = options.catchUpWindowMs ?? DEFAULT_CATCH_UP_WINDOW_MS;
    const ttlSeconds = Math.ceil(this.catchUpWindowMs / 1000) + LOG_TTL_BEYOND_WINDOW_SECONDS;
    this.log = new InterruptLog(options.redis, keys.interruptLog, this.channel, ttlSeconds);
    this.logger = options.logger;
    this.listeners = new Listeners((err, request) => this.logger?.error({ err, sessionId: request.sessionId }, "interrupt listener threw"));
    this.link = new SubscriberLink(options.redis, options.subscriber, { message: this.onMessage, close: this.onDisconnect, ready: this.onReconnect });
  }

  private get subscriber(): Redis {
    return this.link.get();
  }

  /** Tell every process to interrupt the session's running turn. Works with no one listening. */
  async publish(request: InterruptRequest): Promise<void> {
    await this.log.append(request);
  }

  /** Hear every interrupt request; resolves once this process is subscribed. */
  async onInterrupt(listener: InterruptListener): Promise<() => void> {
    if (this.closed) throw new Error("interrupt bus is closed");
    const remove = this.listeners.add(listener);
    this.listening ??= this.startListening();
    try {
      await this.listening;
    } catch (err) {
      this.listening = null;
      remove();
      throw err;
    }
    return remove;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.listeners.clear();
    const subscribed = this.feed !== null;
    this.feed = null;
    await this.link.release(subscribed ? [this.channel] : []);
  }

  // The start is read before SUBSCRIBE and one catch-up follows it, so a request logged in
  // between is delivered too, and live requests wait (held) until that catch-up is done.
  private async startListening(): Promise<void> {
    const start = await this.log.newestPosition();
    if (this.closed) throw new Error("interrupt bus is closed");
    // A caught-up request carries its age, so a listener can tell which turns it predates.
    const deliverItem = (item: LoggedInterrupt): void => this.deliver(item.ageMs === undefined ? item.request : { ...item.request, ageMs: item.ageMs });
    const feed = new CatchUpFeed<LoggedInterrupt>((item) => item.position, deliverItem, start, { held: true });
    this.feed = feed;
    try {
      await this.subscriber.subscribe(this.channel);
    } catch (err) {
      if (this.feed === feed) this.feed = null;
      throw err;
    }
    await this.catchUp(feed, "after subscribing");
  }

  private catchUp(feed: CatchUpFeed<LoggedInterrupt>, when: string): Promise<void> {
    return feed.catchUp((after) => this.log.readRecent(after, this.catchUpWindowMs)).catch((err: unknown) => {
      this.logger?.error({ err }, `interrupt bus: catch-up ${when} failed`);
    });
  }

  private readonly onMessage = (channel: string, message: string): void => {
    if (channel !== this.channel) return;
    const heard = parseChannelMessage(message);
    if (!heard) {
      this.logger?.warn("interrupt bus: unreadable message ignored");
      return;
    }
    // Without a position it came from a publisher that does not log: deliver it live, as is.
    if (heard.position) this.feed?.offer({ request: heard.request, position: heard.position });
    else this.deliver(heard.request);
  };

  private readonly onDisconnect = (): void => {
    this.disconnected = true;
    this.feed?.hold();
  };

  // Catch up only once the channel is subscribed again (ioredis resubscribes too; a repeated
  // SUBSCRIBE is harmless): whatever is logged after the read then arrives live.
  private readonly onReconnect = (): void => {
    if (!this.disconnected || this.closed) return;
    this.disconnected = false;
    const feed = this.feed;
    if (!feed) return;
    this.subscriber
      .subscribe(this.channel)
      .then(() => undefined, (err: unknown) => {
        this.logger?.error({ err }, "interrupt bus: resubscribe failed");
      })
      .then(() => this.catchUp(feed, "after a reconnect"));
  };

  private deliver(request: InterruptRequest): void {
    this.listeners.emit(request);
  }
}
