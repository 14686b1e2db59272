// The cross-process event bus: every stored event of a session is appended to a Redis Stream (its
// stream id IS the event id, monotonic per session) and published on the session's channel, both
// in one Lua script so that the live order equals the stream order in every process; the events
// published during one event-loop turn share one script run (publish-batch.ts).
//
// Subscribing registers on the live channel first, holds live events, replays the stream after
// `since` (exclusive), then releases the held events, skipping any id already delivered: no gaps,
// no duplicates.
//
// Streamed text (`delta`, the ephemeral kinds) is not stored: it is coalesced per session
// (delta-coalescer.ts) and only published, as `- <body>`, in order with the stored events (same
// batches). A listener gets it only while live and not catching up; each frame says where its
// text starts in the reply (`offset`), and the turn's end event carries the final text, so a
// listener that missed frames (joined late, reconnected) still ends with the whole reply.
//
// One pub/sub connection per bus, shared by all subscriptions (per-channel SUBSCRIBE, reference
// counted). Redis outages: while the subscriber connection is down nothing arrives live; on
// reconnect the bus resubscribes, then replays each subscription's stream from the last id it
// delivered, so a listener misses nothing that the stream still holds (MAXLEN and TTL bound it).
// Publishing during an outage fails or waits, as the commands connection is configured to.
import type { Redis } from "ioredis";
import type { Logger } from "pino";
import { isEphemeralKind, type EventKind, type EventPublisher, type EventSubscriber, type GatewayEvent, type SubscribeOptions } from "./types.js";
import { DeltaCoalescer } from "./delta-coalescer.js";
import { LIVE_ONLY_MARK, PublishBatch } from "./publish-batch.js";
import { RedisKeys } from "./keys.js";
import { SubscriberLink } from "./subscriber-link.js";

export interface EventBusOptions {
  /** Commands connection (XADD, XRANGE, EVALSHA). Not closed by the bus. */
  redis: Redis;
  /**
   * A dedicated connection for pub/sub. When omitted the bus creates one with `redis.duplicate()`
   * and closes it on close(); when given, its owner closes it.
   */
  subscriber?: Redis;
  /** The deployment's key prefix (its names: RedisKeys). */
  prefix: string;
  /** Approximate stream length kept per session (`XADD MAXLEN ~`). */
  maxLenPerSession?: number;
  /**
   * Streams expire this long after their last event; 0 keeps them forever. The TTL is refreshed at
   * most once per EXPIRE_REFRESH_MS per session by each process, so a stream may go up to that much
   * sooner.
   */
  ttlSeconds?: number;
  /** Pending streamed text goes out at most this often per session (default DELTA_FRAME_INTERVAL_MS). */
  deltaIntervalMs?: number;
  /** Where listener errors and failed catch-ups are reported. */
  logger?: Logger;
}

export type EventListener = (event: GatewayEvent) => void;

const DEFAULT_MAX_LEN = 2000;
const DEFAULT_TTL_SECONDS = 7 * 24 * 3600;
const REPLAY_PAGE = 500;

/**
 * A stream's TTL is set again only this long after this process last set it for the session: a
 * turn publishes several events within seconds, and one EXPIRE per event would make a large share
 * of the script's commands, for a TTL of days.
 */
export const EXPIRE_REFRESH_MS = 60_000;
/** Sessions whose last refresh is remembered; beyond, the stale ones are forgotten. */
const EXPIRE_MEMORY = 10_000;

// ---------------------------------------------------------------------------------------------
// Stream ids

/** A Redis stream id as two numbers (milliseconds, sequence), for cheap ordering. */
export interface StreamPosition {
  ms: number;
  seq: number;
}

export const STREAM_START: StreamPosition = { ms: 0, seq: 0 };

const STREAM_ID = /^(\d{1,20})(?:-(\d{1,20}))?$/;

/** "1700000000000-3" (or "1700000000000") -> position; null when it is not a stream id. */
export function parseStreamId(id: string): StreamPosition | null {
  const match = STREAM_ID.exec(id);
  if (!match) return null;
  return { ms: Number(match[1]), seq: match[2] === undefined ? 0 : Number(match[2]) };
}

export function comparePositions(a: StreamPosition, b: StreamPosition): number {
  return a.ms !== b.ms ? a.ms - b.ms : a.seq - b.seq;
}

export function formatPosition(position: StreamPosition): string {
  return `${position.ms}-${position.seq}`;
}

// ---------------------------------------------------------------------------------------------
// Gap-free delivery of one ordered feed

/**
 * Delivers items of one session's stream in id order, exactly once, merging a replay from the
 * stream with live items that arrive meanwhile. While held, live items queue up; catchUp() reads
 * the stream after the last delivered id, then releases the queue, skipping what it already sent.
 *
 * Ephemeral items (streamed text, never in the stream) pass straight through while the feed is
 * live, in arrival order, and are dropped while it is held: released after a replay they could
 * land after stored events they preceded. Their text is healed by the turn's end event.
 */
export class CatchUpFeed<T> {
  private held: T[] | null;
  private last: StreamPosition;
  private catchUps: Promise<void> = Promise.resolve();
  // Bumped by every hold(): a catch-up releases held items only if no newer hold came meanwhile
  // (a later catch-up, or a disconnect whose reconnect will catch up again).
  private holdEpoch = 0;

  private readonly isEphemeral: (item: T) => boolean;

  /** `deliver` gets each item and the position of the last stored item delivered before it. */
  constructor(
    private readonly positionOf: (item: T) => StreamPosition,
    private readonly deliver: (item: T, last: StreamPosition) => void,
    startAfter: StreamPosition,
    options: { held: boolean; ephemeral?: (item: T) => boolean },
  ) {
    this.last = startAfter;
    this.held = options.held ? [] : null;
    this.isEphemeral = options.ephemeral ?? (() => false);
  }

  /** The id of the last item delivered (or the start position). */
  get lastPosition(): StreamPosition {
    return this.last;
  }

  /** A live item. */
  offer(item: T): void {
    if (this.isEphemeral(item)) {
      if (!this.held) this.deliver(item, this.last);
      return;
    }
    if (this.held) this.held.push(item);
    else this.emit(item);
  }

  /** Queue live items until the next catchUp() finishes (e.g. while the connection is down). */
  hold(): void {
    this.held ??= [];
    this.holdEpoch++;
  }

  /** Replay what the stream holds after the last delivered id, then release held items. */
  catchUp(read: (after: StreamPosition) => AsyncIterable<T[]>): Promise<void> {
    this.hold();
    const run = this.catchUps.then(async () => {
      const epoch = this.holdEpoch;
      try {
        for await (const page of read(this.last)) for (const item of page) this.emit(item);
      } finally {
        if (this.holdEpoch === epoch) this.release();
      }
    });
    this.catchUps = run.catch(() => undefined);
    return run;
  }

  private release(): void {
    const held = this.held;
    this.held = null;
    if (held) for (const item of held) this.emit(item);
  }

  private emit(item: T): void {
    const position = this.positionOf(item);
    if (comparePositions(position, this.last) <= 0) return;
    this.last = position;
    this.deliver(item, position);
  }
}

// ---------------------------------------------------------------------------------------------
// The bus

interface PositionedEvent {
  event: GatewayEvent;
  position: StreamPosition;
  /** Published live only (streamed text): delivered only while the feed is live, never ordered by id. */
  ephemeral: boolean;
}

interface Channel {
  sessionId: string;
  feeds: Set<CatchUpFeed<PositionedEvent>>;
  /** Resolves once Redis confirmed the SUBSCRIBE. */
  ready: Promise<void>;
}

export class EventBus implements EventPublisher, EventSubscriber {
  private readonly redis: Redis;
  /** Created on first subscribe when not given, so a publish-only process opens no extra connection. */
  private readonly link: SubscriberLink;
  private readonly keys: RedisKeys;
  private readonly maxLen: number;
  private readonly ttlSeconds: number;
  private readonly logger: Logger | undefined;
  private readonly channels = new Map<string, Channel>();
  private readonly deltas: DeltaCoalescer;
  private readonly writes: PublishBatch;
  /** When this process last set each session's stream TTL (insertion order = refresh order). */
  private readonly ttlRefreshedAt = new Map<string, number>();
  private closed = false;
  private disconnected = false;

  constructor(options: EventBusOptions) {
    this.redis = options.redis;
    this.keys = new RedisKeys(options.prefix);
    this.maxLen = options.maxLenPerSession ?? DEFAULT_MAX_LEN;
    this.ttlSeconds = options.ttlSeconds ?? DEFAULT_TTL_SECONDS;
    this.logger = options.logger;
    this.writes = new PublishBatch({ redis: this.redis, maxLen: this.maxLen, ttlSeconds: this.ttlSeconds, logger: this.logger });
    this.deltas = new DeltaCoalescer((sessionId, data) => this.sendEphemeral(sessionId, "delta", data), options.deltaIntervalMs);
    this.link = new SubscriberLink(options.redis, options.subscriber, { message: this.onMessage, close: this.onDisconnect, ready: this.onReconnect });
  }

  private get subscriber(): Redis {
    return this.link.get();
  }

  streamKey(sessionId: string): string {
    return this.keys.eventStream(sessionId);
  }

  private channelName(sessionId: string): string {
    return this.keys.eventChannel(sessionId);
  }

  /**
   * Append an event to the session's stream and publish it live; its stream id is its id. An
   * ephemeral kind (`delta`) is only coalesced for publishing and resolves at once, without an id.
   */
  async publish(sessionId: string, kind: EventKind, data: Record<string, unknown>): Promise<GatewayEvent> {
    const ts = Date.now();
    if (isEphemeralKind(kind)) {
      this.publishLive(sessionId, kind, data);
      return { id: "", session_id: sessionId, kind, data, ts };
    }
    // Streamed text still pending goes out first, in the same batch: the live order holds.
    this.deltas.beforeStored(sessionId, kind);
    const dataJson = JSON.stringify(data);
    const id = await this.writes.stored({
      stream: this.streamKey(sessionId),
      kind,
      dataJson,
      ts,
      channel: this.channelName(sessionId),
      // The body is eventBody()'s, put together in Redis around the data sent once.
      head: `{"session_id":${JSON.stringify(sessionId)},"kind":${JSON.stringify(kind)},"data":`,
      tail: `,"ts":${ts}}`,
      refreshTtl: this.ttlRefreshDue(sessionId, ts),
    });
    return { id, session_id: sessionId, kind, data, ts };
  }

  publishLive(sessionId: string, kind: EventKind, data: Record<string, unknown>): void {
    if (!isEphemeralKind(kind)) throw new Error(`${kind} is stored: publish it with publish()`);
    if (!this.closed) this.deltas.add(sessionId, data);
  }

  /** Publish an event live only (no stream id): the session's coalesced streamed text. */
  private sendEphemeral(sessionId: string, kind: EventKind, data: Record<string, unknown>): void {
    this.writes.liveOnly(this.channelName(sessionId), eventBody(sessionId, kind, JSON.stringify(data), Date.now()));
  }

  /** Whether this event should set the stream's TTL again (see EXPIRE_REFRESH_MS). */
  private ttlRefreshDue(sessionId: string, now: number): boolean {
    if (this.ttlSeconds <= 0) return false;
    const last = this.ttlRefreshedAt.get(sessionId);
    if (last !== undefined && now - last < EXPIRE_REFRESH_MS) return false;
    this.ttlRefreshedAt.delete(sessionId);
    this.ttlRefreshedAt.set(sessionId, now);
    if (this.ttlRefreshedAt.size > EXPIRE_MEMORY) {
      for (const [session, at] of this.ttlRefreshedAt) {
        if (now - at < EXPIRE_REFRESH_MS) break;
        this.ttlRefreshedAt.delete(session);
      }
    }
    return true;
  }

  /**
   * Deliver the session's events to `listener` in order. With `since`, first the stored events
   * after it (exclusive); without, only events published after this call. Resolves once live
   * delivery is in place; the returned function stops it. `liveOnly` (without `since`) skips the
   * stream reads: only events that arrive once the channel is subscribed.
   */
  async subscribe(sessionId: string, listener: EventListener, options: SubscribeOptions = {}): Promise<() => void> {
    if (this.closed) throw new Error("event bus is closed");
    const liveOnly = options.liveOnly === true && options.since === undefined;
    const start = options.since !== undefined ? parseStreamId(options.since) : liveOnly ? STREAM_START : await this.lastPosition(sessionId);
    if (!start) throw new Error(`not an event id: ${options.since}`);
    const feed = new CatchUpFeed<PositionedEvent>(
      (item) => item.position,
      // Streamed text is delivered with the id of the last stored event this listener got.
      (item, last) => this.callListener(listener, item.ephemeral ? { ...item.event, id: formatPosition(last) } : item.event),
      start,
      { held: !liveOnly, ephemeral: (item) => item.ephemeral },
    );
    const channel = this.join(sessionId, feed);
    let unsubscribed = false;
    const unsubscribe = (): void => {
      if (unsubscribed) return;
      unsubscribed = true;
      this.leave(channel, feed);
    };
    try {
      await channel.ready;
      if (!liveOnly) await feed.catchUp((after) => this.readPositioned(sessionId, after));
    } catch (err) {
      unsubscribe();
      throw err;
    }
    return unsubscribe;
  }

  /** The stored events of a session after `after` (exclusive), oldest first, in pages. */
  async *replay(sessionId: string, after: StreamPosition): AsyncIterable<GatewayEvent[]> {
    const key = this.streamKey(sessionId);
    let from = after;
    while (true) {
      const entries = await this.redis.xrange(key, `(${formatPosition(from)}`, "+", "COUNT", REPLAY_PAGE);
      if (entries.length === 0) return;
      const events: GatewayEvent[] = [];
      for (const [id, fields] of entries) {
        const event = eventFromEntry(sessionId, id, fields);
        if (event) events.push(event);
      }
      yield events;
      if (entries.length < REPLAY_PAGE) return;
      from = parseStreamId(entries[entries.length - 1][0]) ?? from;
    }
  }

  /**
   * May events after `after` have been trimmed away (MAXLEN)? Then the oldest event still stored,
   * else undefined. The stream knows how many entries were ever added and how many it holds; when
   * it dropped some and `after` is older than its first entry, the replay cannot be complete.
   */
  async trimmedAfter(sessionId: string, after: StreamPosition): Promise<{ oldest: string } | undefined> {
    let info: unknown[];
    try {
      info = (await this.redis.xinfo("STREAM", this.streamKey(sessionId))) as unknown[];
    } catch {
      return undefined; // no stream (never written, or expired): nothing to compare with
    }
    const field = (name: string): unknown => {
      const index = info.indexOf(name);
      return index >= 0 ? info[index + 1] : undefined;
    };
    const added = Number(field("entries-added"));
    const length = Number(field("length"));
    const first = field("first-entry");
    const oldest = Array.isArray(first) && typeof first[0] === "string" ? first[0] : null;
    const oldestPosition = oldest ? parseStreamId(oldest) : null;
    if (!oldest || !oldestPosition || !(added > length)) return undefined;
    return comparePositions(after, oldestPosition) < 0 ? { oldest } : undefined;
  }

  /** The id of the session's newest stored event, or the stream start when there is none. */
  async lastPosition(sessionId: string): Promise<StreamPosition> {
    const newest = await this.redis.xrevrange(this.streamKey(sessionId), "+", "-", "COUNT", 1);
    return (newest.length > 0 && parseStreamId(newest[0][0])) || STREAM_START;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.deltas.clear();
    const names = [...this.channels.values()].map((channel) => this.channelName(channel.sessionId));
    this.channels.clear();
    await this.link.release(names);
  }

  private async *readPositioned(sessionId: string, after: StreamPosition): AsyncIterable<PositionedEvent[]> {
    for await (const page of this.replay(sessionId, after)) {
      yield page.flatMap((event) => {
        const position = parseStreamId(event.id);
        return position ? [{ event, position, ephemeral: false }] : [];
      });
    }
  }

  private join(sessionId: string, feed: CatchUpFeed<PositionedEvent>): Channel {
    const name = this.channelName(sessionId);
    let channel = this.channels.get(name);
    if (!channel) {
      const created: Channel = { sessionId, feeds: new Set(), ready: Promise.resolve() };
      created.ready = this.subscriber.subscribe(name).then(() => undefined, (err: unknown) => {
        if (this.channels.get(name) === created) this.channels.delete(name);
        throw err;
      });
      channel = created;
      this.channels.set(name, channel);
    }
    channel.feeds.add(feed);
    return channel;
  }

  private leave(channel: Channel, feed: CatchUpFeed<PositionedEvent>): void {
    channel.feeds.delete(feed);
    const name = this.channelName(channel.sessionId);
    if (channel.feeds.size > 0 || this.channels.get(name) !== channel) return;
    this.channels.delete(name);
    if (!this.closed) this.subscriber.unsubscribe(name).catch(() => undefined);
  }

  private readonly onMessage = (channelName: string, message: string): void => {
    const channel = this.channels.get(channelName);
    if (!channel || channel.feeds.size === 0) return;
    const event = eventFromMessage(channel.sessionId, message);
    const ephemeral = event?.id === LIVE_ONLY_MARK;
    const position = ephemeral ? STREAM_START : event && parseStreamId(event.id);
    if (!event || !position) {
      this.logger?.warn({ channel: channelName }, "event bus: unreadable message ignored");
      return;
    }
    const item = { event, position, ephemeral };
    for (const feed of channel.feeds) feed.offer(item);
  };

  private readonly onDisconnect = (): void => {
    this.disconnected = true;
    for (const channel of this.channels.values()) for (const feed of channel.feeds) feed.hold();
  };

  // After a reconnect: make sure every channel is subscribed again (ioredis resubscribes too; a
  // repeated SUBSCRIBE is harmless), then replay what was published while the connection was down.
  private readonly onReconnect = (): void => {
    if (!this.disconnected || this.closed) return;
    this.disconnected = false;
    const channels = [...this.channels.values()];
    if (channels.length === 0) return;
    const names = channels.map((channel) => this.channelName(channel.sessionId));
    this.subscriber
      .subscribe(...names)
      .then(() => undefined, (err: unknown) => {
        this.logger?.error({ err }, "event bus: resubscribe failed");
      })
      .then(() => {
        for (const channel of channels) {
          for (const feed of channel.feeds) {
            feed.catchUp((after) => this.readPositioned(channel.sessionId, after)).catch((err: unknown) => {
              this.logger?.error({ err, sessionId: channel.sessionId }, "event bus: catch-up after reconnect failed");
            });
          }
        }
      });
  };

  private callListener(listener: EventListener, event: GatewayEvent): void {
    try {
      listener(event);
    } catch (err) {
      this.logger?.error({ err, sessionId: event.session_id, kind: event.kind }, "event listener threw");
    }
  }
}

function eventBody(sessionId: string, kind: EventKind, dataJson: string, ts: number): string {
  return `{"session_id":${JSON.stringify(sessionId)},"kind":${JSON.stringify(kind)},"data":${dataJson},"ts":${ts}}`;
}

function eventFromMessage(sessionId: string, message: string): GatewayEvent | null {
  const space = message.indexOf(" ");
  if (space <= 0) return null;
  try {
    const body = JSON.parse(message.slice(space + 1)) as { kind?: unknown; data?: unknown; ts?: unknown };
    if (typeof body.kind !== "string" || typeof body.ts !== "number" || !isRecord(body.data)) return null;
    return { id: message.slice(0, space), session_id: sessionId, kind: storedKind(body.kind), data: body.data, ts: body.ts };
  } catch {
    return null;
  }
}

function eventFromEntry(sessionId: string, id: string, fields: string[]): GatewayEvent | null {
  const values = new Map<string, string>();
  for (let i = 0; i + 1 < fields.length; i += 2) values.set(fields[i], fields[i + 1]);
  const kind = values.get("kind");
  const ts = Number(values.get("ts"));
  try {
    const data: unknown = JSON.parse(values.get("data") ?? "null");
    if (kind === undefined || !Number.isFinite(ts) || !isRecord(data)) return null;
    return { id, session_id: sessionId, kind: storedKind(kind), data, ts };
  } catch {
    return null;
  }
}

/**
 * A kind read back from Redis. Only publish() writes there, with a typed kind; a kind that a newer
 * gateway sharing the Redis added is passed on as is rather than dropped.
 */
function storedKind(kind: string): EventKind {
  return kind as EventKind;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
