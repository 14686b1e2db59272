// A store's memory of the transcript rows it has read. Messages are append-only (never updated
// or deleted), so a later read asks the database only for the rows after the last one held. On
// SQLite row ids follow commit order, so the rows up to that one never change. On PostgreSQL an
// id is drawn at insert and a lower one may commit later, so there the read also counts the rows
// up to the last one held and reads everything again when they are not the ones held (readChecked).
// A turn reloads its whole transcript under the lease; without this, that read grows with every
// message of the conversation. Bounded by the estimated bytes held in all; the least recently read
// sessions go first. A transcript heavier than the bound is not held, but a read ahead of the lease
// (warm) hands its rows to the next read of that session, once, so the read under the lock still
// asks only for newer rows.
//
// The bound is in bytes rather than rows, and generous, because conversations read in turn evict
// each other whole once together they exceed it (least recently read is the next one read again):
// past the bound every turn reads its whole transcript again, and the turns' thread spends its
// time on those reads and the garbage they leave.
import type { StoredMessageTuple } from "./conversation.js";

/** Estimated bytes of rows held across all sessions; a transcript heavier than this alone is not kept. */
export const DEFAULT_TRANSCRIPT_CACHE_BYTES = 64 * 1024 * 1024;
/** What a row costs besides its strings' characters: the tuple and its slots, boxed numbers, the strings' headers (64-bit V8). */
const ROW_OVERHEAD_BYTES = 256;
/** Transcripts too long to hold that wait for their next read: each is one turn's read ahead. */
const MAX_CARRIED = 2;

/** A row's estimated weight in memory. */
export function rowBytes(row: StoredMessageTuple): number {
  let bytes = ROW_OVERHEAD_BYTES;
  for (const value of row) if (typeof value === "string") bytes += value.length;
  return bytes;
}

interface Held {
  rows: StoredMessageTuple[];
  bytes: number;
}

export class TranscriptRows {
  /** Insertion order is recency: a read moves its session to the end. */
  private readonly sessions = new Map<string, Held>();
  private held = 0;
  private heldWeight = 0;
  /** Rows of transcripts too long to hold, read ahead of the lease: taken by the session's next read. */
  private readonly carried = new Map<string, StoredMessageTuple[]>();
  /** Sessions whose rows were held while a write transaction ran (withinWrite), null outside one. */
  private touched: Set<string> | null = null;

  constructor(private readonly maxBytes: number = DEFAULT_TRANSCRIPT_CACHE_BYTES) {}

  /** The session's rows in id order: those held, then `readAfter(lastId)` (0 when none are held). */
  read(sessionId: string, readAfter: (afterId: number) => StoredMessageTuple[]): StoredMessageTuple[] {
    const held = this.sessions.get(sessionId);
    const known = held?.rows ?? this.takeCarried(sessionId) ?? [];
    const added = readAfter(lastIdOf(known));
    return this.remember(sessionId, added.length > 0 ? known.concat(added) : known, held ? held.bytes + weightOf(added) : undefined);
  }

  /**
   * read() ahead of the read that counts (SessionDB: before the lease's transaction, outside the
   * write lock). Rows too long to hold are kept for the session's next read only, which then asks
   * for the newer rows alone: that one runs under the lock.
   */
  warm(sessionId: string, readAfter: (afterId: number) => StoredMessageTuple[]): void {
    const rows = this.read(sessionId, readAfter);
    if (rows.length === 0 || this.sessions.has(sessionId)) return;
    if (this.carried.size >= MAX_CARRIED) this.carried.clear();
    this.carried.set(sessionId, rows);
  }

  private takeCarried(sessionId: string): StoredMessageTuple[] | undefined {
    const rows = this.carried.get(sessionId);
    this.carried.delete(sessionId);
    return rows;
  }

  /**
   * read() for ids that need not follow commit order: `readAfter(afterId, heldCount)` returns the
   * rows after `afterId`, or null when the rows up to it are not `heldCount` many any more (one
   * committed late); then `readAll` reads the session's rows afresh.
   */
  async readChecked(
    sessionId: string,
    readAfter: (afterId: number, heldCount: number) => Promise<StoredMessageTuple[] | null>,
    readAll: () => Promise<StoredMessageTuple[]>,
  ): Promise<StoredMessageTuple[]> {
    const held = this.sessions.get(sessionId);
    if (!held) return this.remember(sessionId, await readAll());
    const added = await readAfter(lastIdOf(held.rows), held.rows.length);
    if (added === null) return this.remember(sessionId, await readAll());
    return this.remember(sessionId, added.length > 0 ? held.rows.concat(added) : held.rows, held.bytes + weightOf(added));
  }

  /**
   * Run a write transaction's synchronous step. When it throws (the transaction rolled back),
   * the transcripts it read are forgotten: they may hold its own rows, now gone. Only those: a
   * write that failed before it read anything (SQLITE_BUSY at BEGIN, while the checkpointer
   * holds the lock) leaves every other transcript held, so the next turns do not read them again.
   */
  withinWrite<T>(step: () => T): T {
    if (this.touched) return step();
    const touched = new Set<string>();
    this.touched = touched;
    try {
      return step();
    } catch (err) {
      for (const sessionId of touched) this.forget(sessionId);
      throw err;
    } finally {
      this.touched = null;
    }
  }

  private forget(sessionId: string): void {
    this.drop(sessionId);
    this.carried.delete(sessionId);
  }

  private drop(sessionId: string): void {
    const held = this.sessions.get(sessionId);
    if (!held) return;
    this.sessions.delete(sessionId);
    this.held -= held.rows.length;
    this.heldWeight -= held.bytes;
  }

  /**
   * Hold `rows` as the session's (most recently read), within the bound; a copy for the caller.
   * `bytes`: their weight when the caller knows it (the rows held before plus those added).
   */
  private remember(sessionId: string, rows: StoredMessageTuple[], bytes = weightOf(rows)): StoredMessageTuple[] {
    this.touched?.add(sessionId);
    // Another read of the session may have finished meanwhile: what it held goes, these stand.
    this.drop(sessionId);
    if (rows.length > 0 && bytes <= this.maxBytes) {
      this.sessions.set(sessionId, { rows, bytes });
      this.held += rows.length;
      this.heldWeight += bytes;
      this.evictOverBound();
    }
    // A copy: callers may sort or splice what they get.
    return rows.slice();
  }

  /** Whether the session's rows are held (a read would ask only for rows added since). */
  holds(sessionId: string): boolean {
    return this.sessions.has(sessionId);
  }

  get heldRows(): number {
    return this.held;
  }

  /** The estimated bytes of the rows held. */
  get heldBytes(): number {
    return this.heldWeight;
  }

  private evictOverBound(): void {
    for (const sessionId of this.sessions.keys()) {
      if (this.heldWeight <= this.maxBytes) return;
      this.drop(sessionId);
    }
  }
}

function weightOf(rows: readonly StoredMessageTuple[]): number {
  let bytes = 0;
  for (const row of rows) bytes += rowBytes(row);
  return bytes;
}

function lastIdOf(rows: readonly StoredMessageTuple[]): number {
  return rows.length > 0 ? Number(rows[rows.length - 1][0]) : 0;
}
