// The pairings table on SQLite: strangers' one-time codes and the operators' approvals of them
// (store-parts/access-store.ts). Each call is one statement or one short write transaction.
import type { Database, Statement } from "better-sqlite3";
import type { PairingRow } from "./types.js";

const COLUMNS = "code, platform, user_id, created_at, expires_at, approved_at, approved_by";

export class PairingSql {
  private readonly liveCode: Statement<[string, string, number], PairingRow>;
  private readonly insert: Statement<[string, string, string, number, number]>;
  private readonly approve: Statement<[number, string, string, number]>;
  private readonly byCode: Statement<[string], PairingRow>;
  private readonly approved: Statement<[string, string], { one: number }>;
  private readonly list: Statement<[number, number], PairingRow>;
  private readonly remove: Statement<[string, string]>;
  private readonly removeOtherCodes: Statement<[string, string, string]>;

  constructor(db: Database) {
    this.liveCode = db.prepare(`SELECT ${COLUMNS} FROM pairings WHERE platform = ? AND user_id = ? AND approved_at IS NULL AND expires_at > ? ORDER BY id DESC LIMIT 1`);
    this.insert = db.prepare("INSERT INTO pairings (code, platform, user_id, created_at, expires_at) VALUES (?, ?, ?, ?, ?)");
    this.approve = db.prepare("UPDATE pairings SET approved_at = ?, approved_by = ? WHERE code = ? AND approved_at IS NULL AND expires_at > ?");
    this.byCode = db.prepare(`SELECT ${COLUMNS} FROM pairings WHERE code = ?`);
    this.approved = db.prepare("SELECT 1 AS one FROM pairings WHERE platform = ? AND user_id = ? AND approved_at IS NOT NULL LIMIT 1");
    this.list = db.prepare(`SELECT ${COLUMNS} FROM pairings WHERE approved_at IS NOT NULL OR expires_at > ? ORDER BY id DESC LIMIT ?`);
    this.remove = db.prepare("DELETE FROM pairings WHERE platform = ? AND user_id = ?");
    this.removeOtherCodes = db.prepare("DELETE FROM pairings WHERE platform = ? AND user_id = ? AND code <> ? AND approved_at IS NULL");
  }

  /** Inside a write transaction: the live code, else the new one recorded. */
  codeFor(platform: string, userId: string, code: string, ttlSeconds: number, now: number): { code: string; fresh: boolean } {
    const live = this.liveCode.get(platform, userId, now);
    if (live) return { code: live.code, fresh: false };
    this.insert.run(code, platform, userId, now, now + ttlSeconds);
    return { code, fresh: true };
  }

  /** Inside a write transaction: approve a live code (its user's other codes go). */
  approveCode(code: string, approvedBy: string, now: number): PairingRow | null {
    if (this.approve.run(now, approvedBy, code, now).changes === 1) {
      const row = this.byCode.get(code)!;
      this.removeOtherCodes.run(row.platform, row.user_id, code);
      return row;
    }
    const row = this.byCode.get(code);
    return row?.approved_at != null ? row : null;
  }

  isPaired(platform: string, userId: string): boolean {
    return this.approved.get(platform, userId) !== undefined;
  }

  listLive(limit: number, now: number): PairingRow[] {
    return this.list.all(now, limit);
  }

  revoke(platform: string, userId: string): boolean {
    return this.remove.run(platform, userId).changes > 0;
  }
}
