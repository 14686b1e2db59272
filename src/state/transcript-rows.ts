// A connection's memory of the transcript rows it has read. Messages are append-only (never
// updated or deleted) and SQLite hands out row ids in commit order, so a session's rows up to the
// last one read never change: a later read asks the database only for the rows after it. A turn
// reloads its whole transcript under the lease; without this, that read grows with every message
// of the conversation. Bounded by rows held in all; the least recently read sessions go first.
import type { StoredMessageTuple } from "./conversation.js";

/** Rows held across all sessions; a transcript longer than this alone is not kept. */
export const DEFAULT_MAX_CACHED_ROWS = 20_000;

export class TranscriptRows {
  /** Insertion order is recency: a read moves its session to the end. */
  private readonly sessions = new Map<string, StoredMessageTuple[]>();
  private held = 0;

  constructor(private readonly maxRows: number = DEFAULT_MAX_CACHED_ROWS) {}

  /** The session's rows in id order: those held, then `readAfter(lastId)` (0 when none are held). */
  read(sessionId: string, readAfter: (afterId: number) => StoredMessageTuple[]): StoredMessageTuple[] {
    const known = this.sessions.get(sessionId) ?? [];
    const lastId = known.length > 0 ? known[known.length - 1][0] : 0;
    const added = readAfter(lastId);
    const rows = added.length > 0 ? known.concat(added) : known;
    this.sessions.delete(sessionId);
    this.held -= known.length;
    if (rows.length > 0 && rows.length <= this.maxRows) {
      this.sessions.set(sessionId, rows);
      this.held += rows.length;
      this.evictOverBound();
    }
    // A copy: callers may sort or splice what they get.
    return rows.slice();
  }

  /** Forget everything: a write transaction that read rows was rolled back (its own rows may be gone). */
  clear(): void {
    this.sessions.clear();
    this.held = 0;
  }

  get heldRows(): number {
    return this.held;
  }

  private evictOverBound(): void {
    for (const [sessionId, rows] of this.sessions) {
      if (this.held <= this.maxRows) return;
      this.sessions.delete(sessionId);
      this.held -= rows.length;
    }
  }
}
