// The pairings table on PostgreSQL: the same rules as on SQLite (../pairings.ts). A user's code is
// taken under a transaction-scoped advisory lock on that user, so two nodes that see the same
// stranger at once show one code, not two.
import type { PairingRow } from "../types.js";
import { clockSql, prepared, type Queryable } from "./connection.js";

const COLUMNS = "code, platform, user_id, created_at, expires_at, approved_at, approved_by";

const LOCK_USER = "SELECT pg_advisory_xact_lock(hashtext('switchboard:pairing:' || $1 || ':' || $2))";
const LIVE_CODE = `SELECT code FROM pairings WHERE platform = $1 AND user_id = $2 AND approved_at IS NULL AND expires_at > ${clockSql(3)} ORDER BY id DESC LIMIT 1`;
const INSERT = `INSERT INTO pairings (code, platform, user_id, created_at, expires_at) VALUES ($1, $2, $3, ${clockSql(5)}, ${clockSql(5)} + $4)`;
const APPROVE = `
  UPDATE pairings SET approved_at = ${clockSql(3)}, approved_by = $2
   WHERE code = $1 AND approved_at IS NULL AND expires_at > ${clockSql(3)}
  RETURNING ${COLUMNS}`;
const BY_CODE = `SELECT ${COLUMNS} FROM pairings WHERE code = $1`;
const REMOVE_OTHER_CODES = "DELETE FROM pairings WHERE platform = $1 AND user_id = $2 AND code <> $3 AND approved_at IS NULL";
const APPROVED = "SELECT 1 FROM pairings WHERE platform = $1 AND user_id = $2 AND approved_at IS NOT NULL LIMIT 1";
const LIST = `SELECT ${COLUMNS} FROM pairings WHERE approved_at IS NOT NULL OR expires_at > ${clockSql(2)} ORDER BY id DESC LIMIT $1`;
const REMOVE = "DELETE FROM pairings WHERE platform = $1 AND user_id = $2";

export class PgPairingSql {
  /** In a transaction: the live code, else the new one recorded. */
  async codeFor(db: Queryable, platform: string, userId: string, code: string, ttlSeconds: number, now: number | null): Promise<{ code: string; fresh: boolean }> {
    await db.query(prepared(LOCK_USER, [platform, userId]));
    const live = await db.query<{ code: string }>(prepared(LIVE_CODE, [platform, userId, now]));
    if (live.rows[0]) return { code: live.rows[0].code, fresh: false };
    await db.query(prepared(INSERT, [code, platform, userId, ttlSeconds, now]));
    return { code, fresh: true };
  }

  /** In a transaction: approve a live code (its user's other codes go); an approved one is returned again. */
  async approveCode(db: Queryable, code: string, approvedBy: string, now: number | null): Promise<PairingRow | null> {
    const approved = await db.query<PairingRow>(prepared(APPROVE, [code, approvedBy, now]));
    const row = approved.rows[0];
    if (row) {
      await db.query(prepared(REMOVE_OTHER_CODES, [row.platform, row.user_id, code]));
      return row;
    }
    const existing = (await db.query<PairingRow>(prepared(BY_CODE, [code]))).rows[0];
    return existing?.approved_at != null ? existing : null;
  }

  async isPaired(db: Queryable, platform: string, userId: string): Promise<boolean> {
    return ((await db.query(prepared(APPROVED, [platform, userId]))).rowCount ?? 0) > 0;
  }

  async listLive(db: Queryable, limit: number, now: number | null): Promise<PairingRow[]> {
    return (await db.query<PairingRow>(prepared(LIST, [limit, now]))).rows;
  }

  async revoke(db: Queryable, platform: string, userId: string): Promise<boolean> {
    return ((await db.query(prepared(REMOVE, [platform, userId]))).rowCount ?? 0) > 0;
  }
}
