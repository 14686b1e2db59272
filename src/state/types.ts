// The shapes of durable state, and the one async interface the agent and the gateway use.
// Nothing here knows about a platform, HTTP or Redis.

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

/** See SessionStore.wakeUpView. */
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

/** Durable ingress: every received message is recorded here before the platform is acknowledged. */
export interface InboxStore {
  /** Insert unless (platform, platformMessageId) exists; a redelivery returns the existing row with inserted=false. */
  recordInbound(insert: InboxInsert): Promise<{ inserted: boolean; row: InboxRow }>;
  /**
   * recordInbound for several messages in ONE transaction (group commit), in the given order (ids
   * follow it); each result is what recordInbound would have returned, a duplicate inside the batch
   * included. All or nothing: when it throws, nothing was recorded. A keyed insert finds (or
   * creates) its session in the same transaction, so the ingress reads nothing before it.
   */
  recordInboundBatch(inserts: ReadonlyArray<InboxInsert | KeyedInboxInsert>): Promise<Array<{ inserted: boolean; row: InboxRow }>>;
  /** Record a message that was received but refused, with the reason (status 'rejected'). */
  recordRejected(insert: InboxInsert, reason: string): Promise<InboxRow>;
  getInboxRow(id: number): Promise<InboxRow | null>;
  findInboxRow(platform: string, platformMessageId: string): Promise<InboxRow | null>;
  markInboxEnqueued(ids: number[]): Promise<void>;
  /** Pending rows of one session, oldest first (the head is the next turn's input). */
  pendingInbox(sessionId: string, limit?: number): Promise<InboxRow[]>;
  /**
   * What a turn's wake-up reads before it runs, in one read: the inbox row it was woken for (by
   * id; null when `inboxId` is null or the row is gone), the head of the conversation's pending
   * inbox, and the live holder of its turn lease (as liveSessionTurnLeaseHolder).
   */
  wakeUpView(conversationId: string, inboxId: number | null): Promise<WakeUpView>;
  /** Every pending row, oldest first: the reconciler re-enqueues these at start-up and after Redis returns. */
  listPendingInbox(limit?: number): Promise<InboxRow[]>;
  /**
   * The oldest pending row of each conversation that has no turn lease at all and whose row was
   * received at least `olderThanSeconds` ago: messages nobody has started on (a wake-up lost with a
   * dead process). Oldest first, up to `limit`.
   */
  unclaimedPendingHeads(olderThanSeconds: number, limit: number): Promise<Array<{ conversationId: string; inboxId: number }>>;
  completeInbox(ids: number[], status: Exclude<InboxStatus, "pending">, reply: string | null, reason?: string | null): Promise<void>;
  inboxCounts(): Promise<Record<InboxStatus, number>>;
}

export interface ClaimDeliveryOptions {
  /** Take a row another claim left in 'sending' only once that claim is this old. Default 0. */
  reclaimAfterSeconds?: number;
}

/** Outbound ledger: every reply is a row before it is sent. */
export interface DeliveryStore {
  createDeliveries(inserts: DeliveryInsert[]): Promise<number[]>;
  getDelivery(id: number): Promise<DeliveryRow | null>;
  /**
   * Claim a delivery for one send attempt: pending -> sending, attempts+1. A row found already
   * 'sending' (a crash between send and record) is claimed with possible_duplicate=true, but only
   * once that claim is `reclaimAfterSeconds` old (default 0): a younger one may be a live send.
   * Returns null when the row is already sent or failed, or its claim is younger.
   */
  claimDelivery(id: number, options?: ClaimDeliveryOptions): Promise<DeliveryRow | null>;
  markDeliverySent(id: number, platformMessageId: string | null): Promise<void>;
  /** final=false puts the row back to pending for a retry. */
  markDeliveryFailed(id: number, error: string, final: boolean): Promise<void>;
  /**
   * A reply whose text was streamed into a posted message is delivered as an edit of it: sets
   * `target.edit_message_id`. Only before the first send attempt; false otherwise.
   */
  setDeliveryEditTarget(id: number, editMessageId: string): Promise<boolean>;
  listUnsentDeliveries(limit?: number): Promise<DeliveryRow[]>;
  deliveriesForSession(sessionId: string): Promise<DeliveryRow[]>;
  /**
   * A platform's report on a sent reply, found by (platform, the message id its send returned),
   * merged into the row's display_metadata as `{receipt, receipts: {<status>: at}, receipt_errors}`.
   * `receipt` never moves back (a late `delivered` after `read` keeps `read`); a repeated report
   * keeps the first time. Null when no delivery has that id.
   */
  recordDeliveryReceipt(platform: string, platformMessageId: string, receipt: DeliveryReceipt): Promise<DeliveryRow | null>;
}

/**
 * The one async interface in front of durable state. The agent and the gateway use only this,
 * and SQLite (session-db.ts) and PostgreSQL (postgres/) implement it alike.
 */
export interface SessionStore extends InboxStore, DeliveryStore {
  createSession(id: string, input: CreateSessionInput): Promise<SessionRow>;
  getSession(id: string): Promise<SessionRow | null>;
  endSession(id: string, reason: string): Promise<void>;
  /** Distinct routing keys that start with `prefix` (e.g. every Slack thread the bot was in). */
  sessionKeysWithPrefix(prefix: string, limit?: number): Promise<string[]>;
  /** Newest activity first. */
  listSessions(options?: { limit?: number }): Promise<SessionSummary[]>;
  /**
   * The live session of a routing key, created atomically when there is none (two first messages
   * racing on one key get one session). `newId` names the session when one is created.
   */
  ensureSessionForKey(sessionKey: string, newId: string, input: CreateSessionInput): Promise<SessionRow>;

  appendMessage(sessionId: string, message: ConversationMessage): Promise<number>;
  /** All-or-nothing; returns the new row ids in order. Fenced when `turnLeaseHolder` is given. */
  appendMessagesBatch(sessionId: string, messages: ConversationMessage[], options?: AppendBatchOptions): Promise<number[]>;
  /** appendMessagesBatch that also returns the ids of the deliveries created by `endRecords` (to enqueue them). */
  flushTurn(sessionId: string, messages: ConversationMessage[], options?: AppendBatchOptions): Promise<FlushResult>;
  getMessages(sessionId: string): Promise<MessageRow[]>;
  /** The attachments recorded with an inbox row (by `recordInbound`), with their bytes, oldest first. */
  inboxAttachments(inboxId: number): Promise<StoredAttachment[]>;
  /** One attachment with its bytes, or null. */
  getAttachment(id: number): Promise<StoredAttachment | null>;
  getMessagesAsConversation(sessionId: string, options?: ConversationReadOptions): Promise<ConversationMessage[]>;
  hasPlatformMessageId(sessionId: string, platformMessageId: string): Promise<boolean>;
  /** The tip: the newest session of the session's compacted chain (the session itself when none). */
  resolveTip(sessionId: string): Promise<string>;
  /**
   * The conversation id: the root of the session's compression chain, shared by every session of
   * the chain (the session's own id when it has no row or no compressed parent).
   */
  conversationIdOf(sessionId: string): Promise<string>;

  // The turn lease is one per conversation. These take any session of the conversation (its
  // conversation id included) and lease the conversation it belongs to; `holder` names the turn.
  tryAcquireSessionTurnLease(sessionId: string, holder: string, options?: { ttlSeconds?: number }): Promise<boolean>;
  acquireSessionTurnLease(sessionId: string, holder: string, options?: LeaseAcquireOptions): Promise<boolean>;
  refreshSessionTurnLease(sessionId: string, holder: string, options?: { ttlSeconds?: number }): Promise<boolean>;
  releaseSessionTurnLease(sessionId: string, holder: string): Promise<void>;
  /**
   * releaseSessionTurnLease, and in the same transaction the head of the conversation's pending
   * inbox (null when none): a message recorded before the release is seen here, and one recorded
   * after it finds the lease free.
   */
  releaseSessionTurnLeaseAndReadHead(sessionId: string, holder: string): Promise<InboxRow | null>;
  /**
   * Who runs a turn on this session's conversation right now: the holder of a lease that has not
   * expired and whose process is not provably dead; null when the lease is free or stale.
   */
  liveSessionTurnLeaseHolder(sessionId: string): Promise<string | null>;
  /**
   * Call `listener` whenever the conversation's turn lease is released, here or (through the
   * notifier) in another process; returns the unsubscribe function. A turn's outcome is recorded
   * before its release, so this is the moment to read it.
   */
  onSessionTurnLeaseReleased(conversationId: string, listener: () => void): () => void;
  /**
   * The leases an acquire would take over now: expired, or held by a process on this host that
   * is provably gone. A dead worker's turn is found here without waiting for its queue job.
   */
  staleSessionTurnLeases(): Promise<StaleLease[]>;
  /**
   * Leases whose holder names this process. `serve`'s supervisor hands on those of a workers thread
   * that died: the process (so the holders' pid) is alive, so nothing else could prove them dead.
   */
  sessionTurnLeasesOfThisProcess(): Promise<Array<{ conversationId: string; holder: string }>>;
  /**
   * Delete a conversation's lease if `holder` still holds it and it is still stale (the acquire's
   * test, in one transaction: a live holder is never reaped); wakes its waiters like a release.
   * True when the row was deleted.
   */
  reapSessionTurnLease(conversationId: string, holder: string): Promise<boolean>;
  getSessionTurnLease(sessionId: string): Promise<{ holder: string; acquired_at: number; expires_at: number } | null>;

  close(): Promise<void>;
}
