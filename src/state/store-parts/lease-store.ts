// LeaseStore: the turn lease, one per conversation, that lets one turn at a time run and fences
// every write of a stale holder. Taken by the agent's admission, watched by turn recovery.
import type { InboxRow, LeaseAcquireOptions, StaleLease } from "../types.js";

/** The turn lease: acquire (with the turn's first reads under it), refresh, release, reap. */
export interface LeaseStore {
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
}
