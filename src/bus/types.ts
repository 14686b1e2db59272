// What the gateway core needs from the event and interrupt buses (implemented over Redis).

/**
 * Every kind of event a session's stream carries: the one list that publishers are typed
 * against and that the WebSocket docs (docs/clients.md) name, in the order a turn goes through.
 */
export const EVENT_KINDS = [
  "message.queued",
  "command",
  "turn.waiting",
  "turn.started",
  "turn.steered",
  "status",
  "delta",
  "tool.started",
  "tool.finished",
  "turn.completed",
  "turn.failed",
  "turn.interrupted",
  "reply.delivered",
  "reply.status",
] as const;

export type EventKind = (typeof EVENT_KINDS)[number];

/**
 * Kinds that are published live only, never stored in the session's stream: streamed reply text.
 * Each carries `offset` (where its `text` starts in the reply being streamed), so a listener that
 * missed some can tell, and the turn's end event carries the whole text.
 */
export const EPHEMERAL_KINDS: ReadonlySet<EventKind> = new Set<EventKind>(["delta"]);

export function isEphemeralKind(kind: string): boolean {
  return EPHEMERAL_KINDS.has(kind as EventKind);
}

/** One event of a session, as stored in its stream and sent to WebSocket clients. */
export interface GatewayEvent {
  /**
   * Monotonic per session: `since` replays are exclusive of this id. An ephemeral event (a delta)
   * has no id of its own: it is delivered with the id of the last stored event its listener got
   * before it, so resuming from it misses nothing and repeats nothing.
   */
  id: string;
  session_id: string;
  kind: EventKind;
  data: Record<string, unknown>;
  ts: number;
}

export interface EventPublisher {
  publish(sessionId: string, kind: EventKind, data: Record<string, unknown>): Promise<GatewayEvent>;
  /**
   * Streamed text (an ephemeral kind): coalesced and published live only, with nothing to wait
   * for. A turn streams a piece per word, so this path allocates no promise.
   */
  publishLive(sessionId: string, kind: EventKind, data: Record<string, unknown>): void;
}

export interface SubscribeOptions {
  /** Replay the stored events after this id first. */
  since?: string;
  /**
   * Only events published once the subscription is live, without reading the stream: for a
   * caller that checks durable state itself after subscribing (two Redis calls fewer).
   */
  liveOnly?: boolean;
}

export interface EventSubscriber {
  subscribe(sessionId: string, listener: (event: GatewayEvent) => void, options?: SubscribeOptions): Promise<() => void>;
}

export interface InterruptRequest {
  sessionId: string;
  text?: string;
  hard?: boolean;
  /** Interrupt only turns whose input is older than this inbox row (busy mode 'interrupt'). */
  beforeInboxId?: number;
  /**
   * Set on delivery when the request was caught up after the subscriber reconnected: how long ago
   * it was published (by the Redis clock, so no clock skew enters). A turn that began more
   * recently than that is not the turn it was meant for.
   */
  ageMs?: number;
}

export interface InterruptPublisher {
  publish(request: InterruptRequest): Promise<void>;
}
