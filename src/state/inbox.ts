// Durable ingress: one row per received platform message, unique on (platform, platform_message_id)
// forever, so a redelivery is recognised however late it comes.
import type { Database, Statement } from "better-sqlite3";
import { fromJson } from "./json-columns.js";
import type { InboxInsert, InboxRow, InboxStatus } from "./types.js";

/** An inbox row as stored: the payload still JSON text. */
export interface StoredInboxRow extends Omit<InboxRow, "payload"> {
  payload: string;
}

export const INBOX_STATUSES: InboxStatus[] = ["pending", "done", "failed", "interrupted", "rejected"];

/**
 * The payload is parsed on first read: most reads (the drain check, outcome waits, the ingress
 * insert) need only ids and status, and a turn reads several rows.
 */
export function toInboxRow(row: StoredInboxRow): InboxRow {
  const stored = row.payload;
  let parsed: Record<string, unknown> | undefined;
  return {
    id: row.id,
    platform: row.platform,
    platform_message_id: row.platform_message_id,
    session_id: row.session_id,
    get payload(): Record<string, unknown> {
      return (parsed ??= fromJson<Record<string, unknown>>(stored) ?? {});
    },
    set payload(value: Record<string, unknown>) {
      parsed = value;
    },
    status: row.status,
    received_at: row.received_at,
    enqueued_at: row.enqueued_at,
    completed_at: row.completed_at,
    reply: row.reply,
    reason: row.reason,
  };
}

export class InboxSql {
  private readonly insert: Statement<[Record<string, unknown>], { id: number }>;
  private readonly selectById: Statement<[number], StoredInboxRow>;
  private readonly selectByKey: Statement<[string, string], StoredInboxRow>;
  private readonly markEnqueued: Statement<[number, string]>;
  private readonly selectPendingForSession: Statement<[string, number], StoredInboxRow>;
  private readonly selectHeadForSession: Statement<[string], StoredInboxRow>;
  private readonly selectPending: Statement<[number], StoredInboxRow>;
  private readonly selectUnclaimedHeads: Statement<[number, number], { session_id: string; id: number }>;
  private readonly complete: Statement<[string, number, string | null, string | null, string]>;
  private readonly completeOne: Statement<[string, number, string | null, string | null, number]>;
  private readonly countByStatus: Statement<[], { status: InboxStatus; n: number }>;

  constructor(db: Database) {
    this.insert = db.prepare(
      `INSERT INTO inbox (platform, platform_message_id, session_id, payload, status, received_at, reason, completed_at)
       VALUES (@platform, @platform_message_id, @session_id, @payload, @status, @received_at, @reason, @completed_at)
       ON CONFLICT (platform, platform_message_id) DO NOTHING
       RETURNING id`,
    );
    this.selectById = db.prepare("SELECT * FROM inbox WHERE id = ?");
    this.selectByKey = db.prepare("SELECT * FROM inbox WHERE platform = ? AND platform_message_id = ?");
    this.markEnqueued = db.prepare("UPDATE inbox SET enqueued_at = ? WHERE id IN (SELECT value FROM json_each(?))");
    this.selectPendingForSession = db.prepare(
      "SELECT * FROM inbox WHERE session_id = ? AND status = 'pending' ORDER BY id LIMIT ?",
    );
    // The head alone, the hot case (twice per turn), with its limit written in: SQLite re-plans a
    // statement whose LIMIT is a bound parameter at every run, which cost more than the read.
    this.selectHeadForSession = db.prepare("SELECT * FROM inbox WHERE session_id = ? AND status = 'pending' ORDER BY id LIMIT 1");
    this.selectPending = db.prepare("SELECT * FROM inbox WHERE status = 'pending' ORDER BY id LIMIT ?");
    this.selectUnclaimedHeads = db.prepare(
      `SELECT session_id, MIN(id) AS id FROM inbox
        WHERE status = 'pending' AND received_at <= ?
          AND NOT EXISTS (SELECT 1 FROM session_turn_leases l WHERE l.conversation_id = inbox.session_id)
        GROUP BY session_id ORDER BY id LIMIT ?`,
    );
    // Only pending rows move: completion is idempotent and a settled row keeps its outcome.
    this.complete = db.prepare(
      `UPDATE inbox SET status = ?, completed_at = ?, reply = ?, reason = ?
        WHERE status = 'pending' AND id IN (SELECT value FROM json_each(?))`,
    );
    // One row, the common case: a rowid lookup instead of a json_each list built per run.
    this.completeOne = db.prepare("UPDATE inbox SET status = ?, completed_at = ?, reply = ?, reason = ? WHERE status = 'pending' AND id = ?");
    this.countByStatus = db.prepare("SELECT status, COUNT(*) AS n FROM inbox GROUP BY status");
  }

  /**
   * Insert unless the platform message exists; a duplicate returns the existing row. A new row is
   * built from what was inserted (only its id comes back): the ingress's hot path neither copies
   * the payload's JSON back out of SQLite nor parses it again.
   */
  record(insert: InboxInsert, now: number, rejectionReason: string | null): { inserted: boolean; row: InboxRow } {
    const row = {
      platform: insert.platform,
      platform_message_id: insert.platformMessageId,
      session_id: insert.sessionId,
      status: rejectionReason === null ? ("pending" as const) : ("rejected" as const),
      received_at: insert.receivedAt ?? now,
      reason: rejectionReason,
      completed_at: rejectionReason === null ? null : now,
    };
    const created = this.insert.get({ ...row, payload: JSON.stringify(insert.payload) });
    if (created) return { inserted: true, row: { ...row, id: created.id, payload: insert.payload, enqueued_at: null, reply: null } };
    const existing = this.selectByKey.get(insert.platform, insert.platformMessageId);
    if (!existing) throw new Error(`inbox row ${insert.platform}/${insert.platformMessageId} vanished`);
    return { inserted: false, row: toInboxRow(existing) };
  }

  get(id: number): InboxRow | null {
    const row = this.selectById.get(id);
    return row ? toInboxRow(row) : null;
  }

  find(platform: string, platformMessageId: string): InboxRow | null {
    const row = this.selectByKey.get(platform, platformMessageId);
    return row ? toInboxRow(row) : null;
  }

  markAsEnqueued(ids: number[], now: number): void {
    if (ids.length > 0) this.markEnqueued.run(now, JSON.stringify(ids));
  }

  pendingForSession(sessionId: string, limit: number): InboxRow[] {
    if (limit === 1) {
      const head = this.selectHeadForSession.get(sessionId);
      return head ? [toInboxRow(head)] : [];
    }
    return this.selectPendingForSession.all(sessionId, limit).map(toInboxRow);
  }

  allPending(limit: number): InboxRow[] {
    return this.selectPending.all(limit).map(toInboxRow);
  }

  unclaimedHeads(receivedBy: number, limit: number): Array<{ conversationId: string; inboxId: number }> {
    return this.selectUnclaimedHeads.all(receivedBy, limit).map((r) => ({ conversationId: r.session_id, inboxId: r.id }));
  }

  completeRows(ids: number[], status: Exclude<InboxStatus, "pending">, reply: string | null, reason: string | null, now: number): void {
    if (ids.length === 1) this.completeOne.run(status, now, reply, reason, ids[0]);
    else if (ids.length > 1) this.complete.run(status, now, reply, reason, JSON.stringify(ids));
  }

  counts(): Record<InboxStatus, number> {
    const counts = Object.fromEntries(INBOX_STATUSES.map((status) => [status, 0])) as Record<InboxStatus, number>;
    for (const { status, n } of this.countByStatus.all()) counts[status] = n;
    return counts;
  }
}
