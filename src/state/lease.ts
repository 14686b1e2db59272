// Every SQL statement that reads or writes session_turn_leases lives here: admission, refresh,
// release and the fence that guards transcript writes. Leases are keyed by conversation id (the
// compression-lineage root, which the caller resolves); times are epoch seconds from the store's clock.
import type { Database, Statement } from "better-sqlite3";
import { TurnLeaseLostError } from "./errors.js";
import { isHeldByThisProcess, isHolderProvablyDead } from "./holder.js";
import type { LeaseAttempt } from "./lease-admission.js";
import type { StaleLease } from "./types.js";

export interface LeaseRow {
  holder: string;
  acquired_at: number;
  expires_at: number;
}

interface StoredLeaseRow extends LeaseRow {
  ttl_seconds: number;
}

export class LeaseSql {
  private readonly selectRow: Statement<[string], StoredLeaseRow>;
  private readonly deleteRow: Statement<[string]>;
  private readonly insertRow: Statement<[string, string, number, number, number]>;
  private readonly extendRow: Statement<[number, number, string, string]>;
  private readonly refreshRow: Statement<[number, number | null, number | null, string, string]>;
  private readonly renewRow: Statement<[number, string, string]>;
  private readonly deleteOwnRow: Statement<[string, string]>;
  private readonly selectAll: Statement<[], StoredLeaseRow & { conversation_id: string }>;
  private readonly acquireTransaction: (conversationId: string, holder: string, ttlSeconds: number, now: number) => LeaseAttempt;
  private readonly acquireSteps: (conversationId: string, holder: string, ttlSeconds: number, now: number) => LeaseAttempt;
  private readonly reapTransaction: (conversationId: string, holder: string, now: number) => boolean;

  constructor(
    private readonly db: Database,
    private readonly thisHost: string,
  ) {
    this.selectRow = db.prepare(
      "SELECT holder, acquired_at, expires_at, ttl_seconds FROM session_turn_leases WHERE conversation_id = ?",
    );
    this.deleteRow = db.prepare("DELETE FROM session_turn_leases WHERE conversation_id = ?");
    this.insertRow = db.prepare(
      "INSERT INTO session_turn_leases (conversation_id, holder, acquired_at, expires_at, ttl_seconds) VALUES (?, ?, ?, ?, ?)",
    );
    this.extendRow = db.prepare(
      "UPDATE session_turn_leases SET expires_at = ?, ttl_seconds = ? WHERE conversation_id = ? AND holder = ?",
    );
    // ttl NULL keeps the TTL the holder acquired with.
    this.refreshRow = db.prepare(
      `UPDATE session_turn_leases
          SET expires_at = ? + COALESCE(?, ttl_seconds), ttl_seconds = COALESCE(?, ttl_seconds)
        WHERE conversation_id = ? AND holder = ?`,
    );
    this.renewRow = db.prepare(
      "UPDATE session_turn_leases SET expires_at = ? + ttl_seconds WHERE conversation_id = ? AND holder = ?",
    );
    this.deleteOwnRow = db.prepare("DELETE FROM session_turn_leases WHERE conversation_id = ? AND holder = ?");
    // One row per turn running (or left by a dead one) in the deployment: small.
    this.selectAll = db.prepare("SELECT conversation_id, holder, acquired_at, expires_at, ttl_seconds FROM session_turn_leases ORDER BY conversation_id");

    this.acquireSteps = (conversationId: string, holder: string, ttlSeconds: number, now: number): LeaseAttempt => {
      let row = this.selectRow.get(conversationId);
      if (row && row.holder !== holder && (row.expires_at <= now || isHolderProvablyDead(row.holder, this.thisHost))) {
        this.deleteRow.run(conversationId);
        row = undefined;
      }
      if (!row) {
        this.insertRow.run(conversationId, holder, now, now + ttlSeconds, ttlSeconds);
        return { acquired: true };
      }
      if (row.holder === holder) {
        // Re-acquire by the same holder: still ours, with a fresh expiry.
        this.extendRow.run(now + ttlSeconds, ttlSeconds, conversationId, holder);
        return { acquired: true };
      }
      return { acquired: false, holder: row.holder, expiresAt: row.expires_at, now };
    };
    const acquire = db.transaction(this.acquireSteps);
    this.acquireTransaction = (conversationId, holder, ttlSeconds, now) => acquire.immediate(conversationId, holder, ttlSeconds, now);

    const reap = db.transaction((conversationId: string, holder: string, now: number): boolean => {
      const row = this.selectRow.get(conversationId);
      // Only the very holder found stale, and only while it still is: a refresh since, or a new
      // holder, keeps the row.
      if (!row || row.holder !== holder || !this.isStale(row, now)) return false;
      this.deleteRow.run(conversationId);
      return true;
    });
    this.reapTransaction = (conversationId, holder, now) => reap.immediate(conversationId, holder, now);
  }

  private isStale(row: LeaseRow, now: number): boolean {
    return row.expires_at <= now || isHolderProvablyDead(row.holder, this.thisHost);
  }

  /**
   * One BEGIN IMMEDIATE transaction: drop an expired row or one whose holder is provably dead on
   * this host, insert ours if absent; acquired iff the row is ours afterwards.
   */
  tryAcquire(conversationId: string, holder: string, ttlSeconds: number, now: number): LeaseAttempt {
    return this.acquireTransaction(conversationId, holder, ttlSeconds, now);
  }

  /** tryAcquire's steps for a caller already in a transaction (all or nothing with the caller's). */
  tryAcquireWithin(conversationId: string, holder: string, ttlSeconds: number, now: number): LeaseAttempt {
    return this.acquireSteps(conversationId, holder, ttlSeconds, now);
  }

  /** Extends expiry when `holder` owns the row (even if it ran out and nobody took it); else false. */
  refresh(conversationId: string, holder: string, ttlSeconds: number | undefined, now: number): boolean {
    const ttl = ttlSeconds ?? null;
    return this.refreshRow.run(now, ttl, ttl, conversationId, holder).changes > 0;
  }

  /** Deletes the row only when `holder` owns it. True when a row was deleted. */
  release(conversationId: string, holder: string): boolean {
    return this.deleteOwnRow.run(conversationId, holder).changes > 0;
  }

  /** The holder of a lease that is still live: not expired and not provably dead. Read only. */
  liveHolder(conversationId: string, now: number): string | null {
    const row = this.selectRow.get(conversationId);
    if (!row || this.isStale(row, now)) return null;
    return row.holder;
  }

  /** Every lease an acquire would take over now (expired, or its holder provably dead). Read only. */
  /** Leases whose holder names this very process (pid and host). */
  listHeldByThisProcess(): Array<{ conversationId: string; holder: string }> {
    return this.selectAll.all().filter((row) => isHeldByThisProcess(row.holder, this.thisHost)).map((row) => ({ conversationId: row.conversation_id, holder: row.holder }));
  }

  listStale(now: number): StaleLease[] {
    const stale: StaleLease[] = [];
    for (const row of this.selectAll.all()) {
      if (isHolderProvablyDead(row.holder, this.thisHost)) stale.push({ conversationId: row.conversation_id, holder: row.holder, reason: "dead" });
      else if (row.expires_at <= now) stale.push({ conversationId: row.conversation_id, holder: row.holder, reason: "expired" });
    }
    return stale;
  }

  /**
   * One BEGIN IMMEDIATE transaction: delete the lease when `holder` still holds it and it is still
   * stale (the same test an acquire applies). True when a row was deleted.
   */
  reap(conversationId: string, holder: string, now: number): boolean {
    return this.reapTransaction(conversationId, holder, now);
  }

  get(conversationId: string): LeaseRow | null {
    const row = this.selectRow.get(conversationId);
    return row ? { holder: row.holder, acquired_at: row.acquired_at, expires_at: row.expires_at } : null;
  }

  /**
   * The fence. Call inside the write transaction, before the guarded writes: a missing row or
   * another holder throws TurnLeaseLostError (the transaction rolls back, nothing is written);
   * our own expired row is renewed, since nobody else took it.
   */
  assertHeld(conversationId: string, holder: string, now: number): void {
    if (!this.db.inTransaction) throw new Error("the lease fence must run inside the write transaction");
    const row = this.selectRow.get(conversationId);
    if (!row || row.holder !== holder) throw new TurnLeaseLostError(conversationId, holder, row?.holder ?? null);
    if (row.expires_at <= now) this.renewRow.run(now, conversationId, holder);
  }
}
