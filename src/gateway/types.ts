// The small interface between platform adapters and the gateway.
import type { IncomingHttpHeaders } from "node:http";
import type { Router } from "express";
import type { DeliveryReceipt } from "../state/types.js";
import type { ErrorAnswer } from "./http-errors.js";

export { DELIVERY_RECEIPT_STATUSES, type DeliveryReceipt, type DeliveryReceiptStatus } from "../state/types.js";

/**
 * A file a platform message carries, recorded as a reference: the platform's adapter downloads
 * it (fetchMedia) when the turn takes the message, so recording (and the platform's ack) never
 * waits for a download. The reference is stored in the inbox row, so keep it small.
 */
export interface MediaRef {
  /** Where the platform serves it (Slack `url_private`, a Discord attachment `url`). */
  url?: string;
  /** The platform's id when the URL comes from a lookup (a Telegram `file_id`, a WhatsApp media id). */
  id?: string;
  name?: string;
  /** As the platform declares it; the gateway checks the bytes anyway. */
  contentType?: string;
  /** Bytes, as the platform declares them; the download is capped anyway. */
  size?: number;
}

/** An image whose bytes are already in hand at ingress (the API's data URLs and fetched URLs). */
export interface InboundImage {
  contentType: string;
  data: Uint8Array;
  name?: string | null;
}

/** What fetchMedia may spend on one file. */
export interface MediaFetchLimits {
  maxBytes: number;
  timeoutMs: number;
}

export interface FetchedMedia {
  data: Uint8Array;
  /** The Content-Type the platform served, if any (the gateway sniffs the bytes regardless). */
  contentType: string | null;
}

/** One inbound message, normalised by its adapter. */
export interface InboundMessage {
  /** 'slack' | 'discord' | 'webhook' | 'api' | 'websocket' | ... */
  platform: string;
  /** The platform's own id for this message; (platform, platformMessageId) is unique forever. */
  platformMessageId: string;
  /**
   * The message's id in the transcript, when it differs from the inbox key (Telegram: the inbox
   * key is the update id, the transcript keeps `<chat>:<message id>`).
   */
  transcriptMessageId?: string | null;
  /**
   * Routing key: which conversation this belongs to, e.g. `slack:T1:C1:1700000000.000100`.
   * The gateway maps it to a session id (or uses `sessionId` when the client addressed one).
   */
  sessionKey: string;
  /** A client-addressed session id (API X-Session-Id, WebSocket session_id). */
  sessionId?: string;
  /**
   * The sources (creating platforms) `sessionId` may have when it names a stored session; absent:
   * any. A client sets its own platforms, so it cannot write into a chat platform's session.
   */
  sessionSources?: readonly string[];
  chatId: string | null;
  threadId: string | null;
  userId: string | null;
  /** The Slack team or Discord guild the message came from (the access policy's `team:` / `guild:` subjects). */
  workspaceId?: string | null;
  /** Sent by another bot the access policy lets in (allow_bots): counted towards its bot-loop limit. */
  fromBot?: boolean;
  text: string;
  /** Files to download when the turn takes the message (platform messages). */
  attachments?: MediaRef[];
  /** Images already in hand, stored with the inbox row (never in its JSON payload). */
  images?: InboundImage[];
  displayKind?: string | null;
  displayMetadata?: Record<string, unknown> | null;
  /** Epoch milliseconds. */
  receivedAt: number;
  /** Where the reply goes: adapter specific (channel + thread_ts, interaction token, callback URL...). */
  replyTarget: Record<string, unknown> | null;
  /** Prior messages to seed a fresh session with (API requests without a session id). */
  seedHistory?: Array<{ role: "system" | "user" | "assistant"; content: string }>;
  /** Text the model sees instead of `text`, when it differs (e.g. with a time stamp prefix). */
  apiText?: string | null;
}

export { SessionNotAddressableError } from "./session-not-addressable.js";

export type AcceptResult =
  | { status: "accepted"; inboxId: number; sessionId: string; enqueued: boolean }
  | { status: "duplicate"; inboxId: number; sessionId: string }
  | { status: "rejected"; reason: string };

/** The outcome of the turn that consumed an inbox row. */
export interface TurnOutcome {
  inboxId: number;
  sessionId: string;
  status: "done" | "failed" | "interrupted" | "rejected";
  reply: string | null;
  /** When the inbox row was received (epoch seconds). */
  receivedAt: number;
}

/** What an adapter may call on the gateway. */
export interface GatewayIngress {
  /** Record durably, enqueue, and only then return. */
  accept(message: InboundMessage): Promise<AcceptResult>;
  /**
   * Wait for the turn that consumes this inbox row (for synchronous replies: API, sync webhooks).
   * Resolves at once when the row is already complete; rejects on timeout. `conversationId`, the
   * row's session_id as accept() returned it, lets the wait listen at once instead of reading the
   * row first to learn it.
   */
  /** `recordedNow`: the caller's accept() just answered `accepted` for this row (no read is due yet). */
  waitForOutcome(inboxId: number, timeoutMs: number, conversationId?: string, options?: { recordedNow?: boolean }): Promise<TurnOutcome>;
  /** Interrupt the session's running turn, wherever it runs (soft keeps what was written). */
  interrupt(sessionId: string, options: { text?: string; hard?: boolean }): Promise<void>;
  /**
   * Record a received message that cannot be a turn (a voice note, a sticker), with the reason:
   * an inbox row with status 'rejected', never answered; a redelivery finds the same row.
   */
  recordRejected(message: InboundMessage, reason: string): Promise<AcceptResult>;
  /**
   * The platform's report on a reply it was sent (WhatsApp: sent, delivered, read, failed),
   * found by the message id the send returned: shown in the delivery's display metadata and
   * published as a `reply.status` event. False when no reply of ours has that id.
   */
  recordDeliveryReceipt(platform: string, platformMessageId: string, receipt: DeliveryReceipt): Promise<boolean>;
}

/** A reply to send through a platform. */
export interface OutboundReply {
  deliveryId: number;
  sessionId: string;
  target: Record<string, unknown>;
  text: string;
  /** True when an earlier attempt may already have reached the platform. */
  possibleDuplicate: boolean;
}

export interface SendResult {
  /** The platform's id of the sent message, when it gives one. */
  platformMessageId: string | null;
}

/** Thrown by an adapter's send when the platform asks to slow down. */
export class RateLimitedError extends Error {
  constructor(
    readonly retryAfterMs: number,
    message = `rate limited; retry after ${retryAfterMs} ms`,
  ) {
    super(message);
    this.name = "RateLimitedError";
  }
}

/** Thrown by an adapter's send for an error that a retry cannot fix (bad token, unknown channel). */
export class PermanentSendError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "PermanentSendError";
  }
}

export interface AdapterCapabilities {
  threads: boolean;
  edits: boolean;
  streaming: boolean;
  typing: boolean;
}

/** A reply streamed as one message with throttled edits while the turn writes it. */
export interface ReplyStream {
  push(delta: string): void;
  /**
   * The whole reply is known: show it now in the posted message (one edit, not waiting for the
   * throttle), while the turn records it. Nothing when nothing was posted.
   */
  showFinal?(text: string): void;
  /**
   * Stop editing (waits for a request in flight); the final text goes out as a delivery that edits
   * `messageId`, or, when nothing was posted yet (messageId null), posts it as one message.
   * `shownText`: what the posted message shows now, when known.
   */
  close(): Promise<{ messageId: string | null; shownText?: string | null }>;
  /**
   * Close now, synchronously, when nothing was posted and no post is in flight (true): the final
   * text is then sent as one new message that no stream edit can race. False: the stream goes on.
   */
  closeIfUnposted(): boolean;
}

/** A route's answer before anything writes it: a status and, when there is one, a JSON body. */
export interface PlainAnswer {
  status: number;
  json?: unknown;
}

/**
 * A platform's signed POST route, as the HTTP server guards it before the route reads its body:
 * a client address whose requests failed the route's signature or secret check (401) too often
 * within a minute gets 429 with Retry-After, on every platform route, until the burst has aged;
 * what the headers alone can show (a signature header missing, a stale timestamp, a declared
 * length over the platform's limit) is answered at once; and the bodies read before their
 * signature is checked share one budget of bytes in the process (503 with Retry-After past it).
 */
export interface PlatformRequestRule {
  /** The exact path (compared without case and trailing slash, as Express routes it). */
  path: string;
  /** The largest body the platform sends there: the route's body limit too. */
  maxBodyBytes: number;
  /** Why the headers alone refuse the request (a catalogue answer), or null to read its body. */
  refusal?(headers: IncomingHttpHeaders, nowMs: number): ErrorAnswer | null;
}

/** One platform. Adding a platform means adding one folder with one of these. */
export interface PlatformAdapter {
  readonly platform: string;
  readonly capabilities: AdapterCapabilities;
  /** HTTP routes mounted at the root (with the raw body available as `req.rawBody`). */
  routes?(ingress: GatewayIngress): Router;
  /** The signed POST routes of `routes()`, for the HTTP server's guard (PlatformRequestRule). */
  requestRules?(): PlatformRequestRule[];
  /** Long-lived clients (Discord gateway, Slack Socket Mode). */
  start?(ingress: GatewayIngress): Promise<void>;
  stop?(): Promise<void>;
  /** Send a reply; throws RateLimitedError / PermanentSendError / other errors (retried). */
  send(reply: OutboundReply): Promise<SendResult>;
  /** Edit a sent message (streaming as throttled edits). */
  edit?(target: Record<string, unknown>, platformMessageId: string, text: string): Promise<void>;
  /** Start streaming a reply into one message (platforms with edits). */
  openStream?(target: Record<string, unknown>): ReplyStream;
  /**
   * Called once when a turn starts on a message with this reply target: show a typing / status
   * indicator (WhatsApp marks the message read). Best effort: a failure never stops the turn.
   */
  typing?(target: Record<string, unknown>): Promise<void>;
  /**
   * Download one file a message of this platform referenced (`InboundMessage.attachments`), with
   * the platform's credentials, within `limits`. Throws a MediaError (gateway/media.ts) with a
   * reason a user can read. Telegram would call getFile and download the file path; WhatsApp
   * would look up the media id's URL and download it with the bearer token.
   */
  fetchMedia?(ref: MediaRef, limits: MediaFetchLimits): Promise<FetchedMedia>;
}

/** A published event, as WebSocket clients see it. */
export type { GatewayEvent } from "../bus/types.js";
