// The shapes of durable state, and the one async interface the agent and the gateway use (the
// intersection of its parts in store-parts/). Nothing here knows about a platform, HTTP or Redis.
import type { AccessStore } from "./store-parts/access-store.js";
import type { UsageStore } from "./store-parts/usage-store.js";
import type { AttachmentStore } from "./store-parts/attachment-store.js";
import type { DeliveryStore } from "./store-parts/delivery-store.js";
import type { InboxStore } from "./store-parts/inbox-store.js";
import type { LeaseStore } from "./store-parts/lease-store.js";
import type { StoreLifecycle } from "./store-parts/store-lifecycle.js";
import type { TranscriptStore } from "./store-parts/transcript-store.js";

export type { AccessStore, UsageStore, AttachmentStore, DeliveryStore, InboxStore, LeaseStore, StoreLifecycle, TranscriptStore };

export type Role = "system" | "user" | "assistant" | "tool";

export interface ToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

/** A session row. Times are epoch seconds (float). */
export interface SessionRow {
  id: string;
  source: string;
  session_key: string | null;
  chat_id: string | null;
  thread_id: string | null;
  user_id: string | null;
  parent_session_id: string | null;
  started_at: number;
  ended_at: number | null;
  end_reason: string | null;
  title: string | null;
  model: string | null;
}

/** A session with the time of its latest message, for listings. */
export interface SessionSummary extends SessionRow {
  /** Epoch seconds of the newest message, or null when it has none. */
  last_activity: number | null;
}

export interface CreateSessionInput {
  source: string;
  sessionKey?: string | null;
  chatId?: string | null;
  threadId?: string | null;
  userId?: string | null;
  parentSessionId?: string | null;
  title?: string | null;
  model?: string | null;
  startedAt?: number;
}

/**
 * An image kept with a message (in the session store, so every machine sees it). `data` is
 * present when the store reads a transcript for the model, absent on listings.
 */
export interface MessageAttachment {
  /** The row id once stored. Written again with another message (a compaction copy), it is copied. */
  id?: number;
  content_type: string;
  size_bytes: number;
  name?: string | null;
  data?: Uint8Array;
}

/** An attachment's bytes as ingress records them with the inbox row (same transaction). */
export interface AttachmentUpload {
  content_type: string;
  name?: string | null;
  data: Uint8Array;
}

/** A stored attachment with its bytes; `session_id`/`message_id` are set once a message holds it. */
export interface StoredAttachment extends MessageAttachment {
  id: number;
  data: Uint8Array;
  inbox_id: number | null;
  session_id: string | null;
  message_id: number | null;
}

/** A message as the agent holds it in memory and hands to the store to persist. */
export interface ConversationMessage {
  role: Role;
  content: string | null;
  /** The exact text sent to the model when it differs from `content`. */
  api_content?: string | null;
  tool_calls?: ToolCall[] | null;
  tool_call_id?: string | null;
  tool_name?: string | null;
  /** Epoch seconds. */
  timestamp?: number | null;
  /** The platform's id of this message (Slack ts, Discord snowflake, webhook delivery id, ...). */
  platform_message_id?: string | null;
  /** On reads from `getMessagesAsConversation`, the platform id comes back under this name too. */
  message_id?: string | null;
  display_kind?: string | null;
  display_metadata?: Record<string, unknown> | null;
  finish_reason?: string | null;
  /** Images of a user message: stored with it, read back with their bytes. */
  attachments?: MessageAttachment[];
  /** Row id, present only when asked for with `includeRowIds`. */
  _row_id?: number;
  /** Set on a user message carried out of a turn that was interrupted before admission. */
  _persist_after_admission_interrupt?: boolean;
}

/** A stored message row, as `getMessages` returns it. */
export interface MessageRow {
  id: number;
  session_id: string;
  role: Role;
  content: string | null;
  api_content: string | null;
  tool_calls: ToolCall[] | null;
  tool_call_id: string | null;
  tool_name: string | null;
  timestamp: number;
  platform_message_id: string | null;
  display_kind: string | null;
  display_metadata: Record<string, unknown> | null;
  finish_reason: string | null;
  /** The message's attachments without their bytes; present when it has any. */
  attachments?: MessageAttachment[];
}

export interface ConversationReadOptions {
  /** Merge/repair so roles alternate the way chat models expect (no two user turns in a row, no orphan tool results). */
  repairAlternation?: boolean;
  /** Add `_row_id` to each message. */
  includeRowIds?: boolean;
}

/** A turn lease that may be taken over now, and the holder it was found with. */
export interface StaleLease {
  conversationId: string;
  holder: string;
  /** `dead`: its holder is a process on this host that is gone; `expired`: its time ran out. */
  reason: "dead" | "expired";
}

export interface LeaseAcquireOptions {
  /** Lease time to live; a holder must refresh before it runs out. */
  ttlSeconds?: number;
  /** Give up (return false) after this long. */
  waitSeconds?: number;
  /** A live holder has the lease: called at the first failed attempt (elapsed 0), then at most every 15 s. */
  onWait?: (elapsedSeconds: number) => void;
  /** The database was locked/busy: no holder is known, so no user notice; keep trying. */
  onContended?: () => void;
  /** Checked before each attempt; true -> return false at once. */
  shouldAbort?: () => boolean;
  /**
   * Set: when a live holder has the lease, call it and give up at once (return false) instead of
   * waiting. A busy database is still waited out; only a holder is trusted to hand the work on.
   */
  onHeldGiveUp?: () => void;
  /**
   * Read the turn's starting state in the transaction that takes the lease (one step instead of
   * an acquire and then several reads): the tip of `sessionId`'s chain, whether its row exists,
   * and its model-ready transcript (repaired, with row ids). Handed to `onRead` when the lease is
   * taken; a store without the combined step leaves it uncalled (the caller then reads itself).
   * A failing read fails that attempt, and nothing is held. With `pendingInboxLimit`, the same
   * step also reads the head of the conversation's pending inbox (up to that many rows). With
   * `input`, the same step may also store the turn's first input (see InputUnderLease).
   */
  readUnderLease?: { sessionId: string; onRead: (read: TurnStartRead) => void; pendingInboxLimit?: number; input?: InputUnderLease };
}

/**
 * A turn's first input, stored by the admission's own step once the lease is taken: under the
 * lease's fence, in the tip, after the transcript the step reads (so not in it). Stored only when
 * its inbox row is pending and the head of the conversation's pending inbox (so strict order
 * holds), and the tip holds no message with its platform id yet (a crashed turn's flush); the
 * tip's row is created with it when the tip has none. A store may pass (the caller then stores it
 * in its first flush), and does so when the tip moved since the session's last turn.
 */
export interface InputUnderLease {
  /** The inbox row the message comes from. */
  inboxId: number;
  /** One user message without attachments, as a flush would store it. */
  message: ConversationMessage;
  /** The tip's row when it has none. */
  session: CreateSessionInput;
}

/** See InboxStore.wakeUpView. */
export interface WakeUpView {
  row: InboxRow | null;
  head: InboxRow | null;
  liveHolder: string | null;
}

/** What a turn reads under its lease before it runs (see LeaseAcquireOptions.readUnderLease). */
export interface TurnStartRead {
  /** The tip: the newest session of the compacted chain. */
  sessionId: string;
  sessionExists: boolean;
  /** The tip's transcript as getMessagesAsConversation(tip, {repairAlternation, includeRowIds}) returns it; empty without a row. */
  transcript: ConversationMessage[];
  /** pendingInbox(conversationId, pendingInboxLimit) as of the lease's transaction, when asked for. */
  pendingInbox?: InboxRow[];
  /** The row id of readUnderLease.input's message, when the step stored it (then sessionExists is true). */
  inputRowId?: number;
}

/**
 * What a turn's final flush records beside its messages, in the same fenced transaction: the
 * inbox rows it answered, and its replies in the deliveries ledger.
 */
export interface TurnEndRecords {
  /** Inbox rows consumed by this turn: marked done, with the reply text. */
  completeInbox?: { ids: number[]; reply: string | null; status?: "done" | "failed" | "interrupted" };
  /** Outbound replies to record in the deliveries ledger (pending). */
  deliveries?: DeliveryInsert[];
  /** What the turn's model calls used, recorded with its outcome. */
  usage?: UsageInsert;
}

/** One turn's model usage, as the turn_usage table keeps it. */
export interface UsageInsert {
  platform: string;
  sessionId: string;
  userId: string | null;
  /** The inbox row the turn answered (the last of its input). */
  inboxId: number | null;
  model: string;
  modelCalls: number;
  promptTokens: number;
  completionTokens: number;
  toolCalls: number;
}

/** Usage summed per model (GET /api/usage). */
export interface UsageTotals {
  model: string;
  turns: number;
  model_calls: number;
  prompt_tokens: number;
  completion_tokens: number;
  tool_calls: number;
}

export interface UsageFilter {
  platform?: string;
  userId?: string;
  /** Epoch seconds: turns recorded at or after. */
  since?: number;
}

/** What a fenced flush wrote: message row ids in order, and the deliveries its end records created. */
export interface FlushResult {
  messageIds: number[];
  deliveryIds: number[];
}

export interface AppendBatchOptions {
  /** Fence: the write happens only if this holder owns the session's turn lease. */
  turnLeaseHolder?: string | null;
  endRecords?: TurnEndRecords;
}

// ---- inbox (durable ingress) ----

export type InboxStatus = "pending" | "done" | "failed" | "interrupted" | "rejected";

export interface InboxInsert {
  platform: string;
  platformMessageId: string;
  sessionId: string;
  /** The normalised inbound message, stored as JSON. */
  payload: Record<string, unknown>;
  receivedAt?: number;
  /** Images that came with the message, stored with the row (a duplicate stores none). */
  attachments?: AttachmentUpload[];
}

/**
 * Where an inbound row belongs when the caller knows only its routing key: the key's live session
 * (an open session with that key, else the open tip of a compressed one), created as `newId` when
 * there is none. The store finds it in the row's own transaction, and the row is recorded under
 * that session's conversation id.
 */
export interface SessionForKey {
  key: string;
  newId: string;
  input: CreateSessionInput;
}

/** An inbox insert whose session is found (or created) by its routing key, in the insert's transaction. */
export interface KeyedInboxInsert extends Omit<InboxInsert, "sessionId"> {
  sessionForKey: SessionForKey;
}

export interface InboxRow {
  id: number;
  platform: string;
  platform_message_id: string;
  session_id: string;
  payload: Record<string, unknown>;
  status: InboxStatus;
  received_at: number;
  enqueued_at: number | null;
  completed_at: number | null;
  reply: string | null;
  reason: string | null;
}

// ---- deliveries (outbound ledger) ----

export type DeliveryStatus = "pending" | "sending" | "sent" | "failed";

export interface DeliveryInsert {
  platform: string;
  sessionId: string;
  /** Where to send: platform specific (channel, thread, callback URL...), stored as JSON. */
  target: Record<string, unknown>;
  text: string;
  /** The inbox row this reply answers, when there is one. */
  inboxId?: number | null;
  /**
   * Written already claimed for its first send attempt (status 'sending', attempts 1), by a
   * writer that sends it right after its transaction commits: the claim's own write is saved.
   * Should that send never happen (a crash), the row is taken again like any claim left behind,
   * once it is old enough, as a possible duplicate. Not for a row whose target may still change
   * (a streamed reply's edit target is set only on an unclaimed row).
   */
  claimed?: boolean;
}

export interface DeliveryRow {
  id: number;
  platform: string;
  session_id: string;
  inbox_id: number | null;
  target: Record<string, unknown>;
  text: string;
  status: DeliveryStatus;
  attempts: number;
  /** Set when a send may have happened before a crash: a resend is marked as a possible duplicate. */
  possible_duplicate: boolean;
  platform_message_id: string | null;
  last_error: string | null;
  /** What the platform reported after the send (see DeliveryReceipt), for display; null before any report. */
  display_metadata: Record<string, unknown> | null;
  created_at: number;
  updated_at: number;
}

/** The platform's word on a sent message, in the order a message goes through them. */
export const DELIVERY_RECEIPT_STATUSES = ["sent", "delivered", "read", "failed"] as const;
export type DeliveryReceiptStatus = (typeof DELIVERY_RECEIPT_STATUSES)[number];

/** A status report for a sent reply (WhatsApp's `statuses[]`). */
export interface DeliveryReceipt {
  status: DeliveryReceiptStatus;
  /** When the platform says it happened, epoch seconds. */
  at: number;
  /** The platform's errors, for a failed message. */
  errors?: Array<Record<string, unknown>>;
}

/** Wakes lease waiters when a lease is released somewhere (another process, another host). */
export interface LeaseReleaseNotifier {
  /** Tell other processes a lease was released. */
  publishRelease(conversationId: string): void;
  /** Subscribe to releases from other processes; returns an unsubscribe function. */
  onRelease(listener: (conversationId: string) => void): () => void;
}

export interface ClaimDeliveryOptions {
  /** Take a row another claim left in 'sending' only once that claim is this old. Default 0. */
  reclaimAfterSeconds?: number;
}

/**
 * The one async interface in front of durable state, as its parts (store-parts/): the agent and the
 * gateway use only these, and SQLite (session-db.ts) and PostgreSQL (postgres/) implement them alike.
 */
/** A pairing of the access policy: a stranger's one-time code, approved or still waiting. */
export interface PairingRow {
  code: string;
  platform: string;
  user_id: string;
  created_at: number;
  expires_at: number;
  /** Null until an operator approves the code. */
  approved_at: number | null;
  approved_by: string | null;
}

export interface SessionStore extends TranscriptStore, LeaseStore, InboxStore, DeliveryStore, AttachmentStore, AccessStore, UsageStore, StoreLifecycle {}
