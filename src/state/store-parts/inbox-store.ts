// InboxStore: durable ingress. The gateway's ingress records here, the turn worker wakes up from
// here, the reconciler re-enqueues from here.
import type { InboxInsert, InboxRow, InboxStatus, KeyedInboxInsert, WakeUpView } from "../types.js";

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
