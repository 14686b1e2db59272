// Which local clients watch which session. One bus subscription per session per process, shared
// by all its local clients: each event is serialised once and the same bytes go to every client.
// A client subscribing with `since` gets its own replay from the stream, merged with the shared
// live feed by event id, so it sees every event once and in order.
//
// Streamed text (`delta`) is live only: a client gets the frames that arrive while it is
// subscribed and not catching up, each with the id of the last stored event that client got
// before it (so resuming from it is exact). The frame's `offset` and the turn's end event (the
// final text) let the client complete what it missed.
import type { Logger } from "pino";
import {
  CatchUpFeed,
  comparePositions,
  formatPosition,
  parseStreamId,
  STREAM_START,
  type EventBus,
  type StreamPosition,
} from "../../bus/event-bus.js";
import { isEphemeralKind } from "../../bus/types.js";
import type { GatewayEvent } from "../../gateway/types.js";
import type { HubClient } from "./client.js";
import { eventFrame } from "./frames.js";

/** What the hub needs from the EventBus. */
export type HubEventSource = Pick<EventBus, "subscribe" | "replay" | "trimmedAfter">;

interface OutgoingEvent {
  position: StreamPosition;
  frame: Buffer;
  /** Set for streamed text: the event, to be framed with each client's own last id. */
  ephemeral: EphemeralFrames | null;
}

/** One streamed-text event, serialised once per distinct id it goes out with (usually one). */
class EphemeralFrames {
  private readonly frames = new Map<string, Buffer>();

  constructor(private readonly event: GatewayEvent) {}

  /** The frame for a client whose last stored event is at `clientLast`. */
  frameAfter(busLast: StreamPosition, clientLast: StreamPosition): Buffer {
    // The bus stamps the id of the last stored event it delivered; a client that replayed further
    // (with `since`) is ahead of it.
    const id = formatPosition(comparePositions(clientLast, busLast) > 0 ? clientLast : busLast);
    let frame = this.frames.get(id);
    if (!frame) {
      frame = eventFrame({ ...this.event, id });
      this.frames.set(id, frame);
    }
    return frame;
  }
}

interface WatchedSession {
  clients: Map<HubClient, CatchUpFeed<OutgoingEvent>>;
  /** Resolves once the bus subscription is live. */
  ready: Promise<void>;
  stop: (() => void) | null;
}

const EMPTY = Buffer.alloc(0);

export class SubscriptionRegistry {
  private readonly sessions = new Map<string, WatchedSession>();

  constructor(
    private readonly bus: HubEventSource,
    private readonly logger: Logger,
  ) {}

  /** Sessions with at least one local client. */
  get sessionCount(): number {
    return this.sessions.size;
  }

  /**
   * Start sending the session's events to the client: with `since`, the stored events after it
   * first. Subscribing again to the same session starts over from the new `since`.
   */
  async subscribe(client: HubClient, sessionId: string, since?: string): Promise<void> {
    this.unsubscribe(client, sessionId);
    const start = since === undefined ? STREAM_START : parseStreamId(since);
    if (!start) throw new Error(`not an event id: ${since}`);
    const session = this.watch(sessionId);
    const feed = new CatchUpFeed<OutgoingEvent>(
      (item) => item.position,
      (item, last) => client.send(item.ephemeral ? item.ephemeral.frameAfter(item.position, last) : item.frame),
      start,
      { held: since !== undefined, ephemeral: (item) => item.ephemeral !== null },
    );
    session.clients.set(client, feed);
    client.sessions.add(sessionId);
    try {
      await session.ready;
      if (since !== undefined) {
        const trimmed = await this.bus.trimmedAfter(sessionId, start);
        if (trimmed) {
          client.sendErrorFrame(
            { code: "events_trimmed", message: `some events after ${since} are no longer stored; replaying from ${trimmed.oldest}` },
            { session_id: sessionId },
          );
        }
        await feed.catchUp((after) => this.replay(sessionId, after));
      }
    } catch (err) {
      if (session.clients.get(client) === feed) this.unsubscribe(client, sessionId);
      throw err;
    }
  }

  unsubscribe(client: HubClient, sessionId: string): void {
    client.sessions.delete(sessionId);
    const session = this.sessions.get(sessionId);
    if (!session || !session.clients.delete(client)) return;
    if (session.clients.size === 0) this.unwatch(sessionId, session);
  }

  removeClient(client: HubClient): void {
    for (const sessionId of [...client.sessions]) this.unsubscribe(client, sessionId);
  }

  close(): void {
    for (const [sessionId, session] of this.sessions) this.unwatch(sessionId, session);
  }

  private watch(sessionId: string): WatchedSession {
    const existing = this.sessions.get(sessionId);
    if (existing) return existing;
    const session: WatchedSession = { clients: new Map(), ready: Promise.resolve(), stop: null };
    session.ready = this.bus.subscribe(sessionId, (event) => this.fanOut(session, event)).then(
      (stop) => {
        // Everyone left while the subscription was being set up.
        if (this.sessions.get(sessionId) !== session) stop();
        else session.stop = stop;
      },
      (err: unknown) => {
        if (this.sessions.get(sessionId) === session) this.sessions.delete(sessionId);
        throw err;
      },
    );
    session.ready.catch(() => undefined);
    this.sessions.set(sessionId, session);
    return session;
  }

  private unwatch(sessionId: string, session: WatchedSession): void {
    if (this.sessions.get(sessionId) === session) this.sessions.delete(sessionId);
    session.stop?.();
    session.stop = null;
  }

  private fanOut(session: WatchedSession, event: GatewayEvent): void {
    const position = parseStreamId(event.id);
    if (!position) {
      this.logger.warn({ sessionId: event.session_id, id: event.id }, "event without a stream id ignored");
      return;
    }
    const ephemeral = isEphemeralKind(event.kind) ? new EphemeralFrames(event) : null;
    const item: OutgoingEvent = { position, frame: ephemeral ? EMPTY : eventFrame(event), ephemeral };
    for (const feed of session.clients.values()) feed.offer(item);
  }

  private async *replay(sessionId: string, after: StreamPosition): AsyncIterable<OutgoingEvent[]> {
    for await (const page of this.bus.replay(sessionId, after)) {
      yield page.flatMap((event) => {
        const position = parseStreamId(event.id);
        return position ? [{ position, frame: eventFrame(event), ephemeral: null }] : [];
      });
    }
  }
}
