// Durable ingress on PostgreSQL: unique on (platform, platform_message_id) forever; a redelivery
// that races the first delivery on another node waits for it and returns its row.
import { INBOX_STATUSES, toInboxRow, type StoredInboxRow } from "../inbox.js";
import type { InboxInsert, InboxRow, InboxStatus } from "../types.js";
import { clockSql, prepared, type Queryable } from "./connection.js";
import { compressionParentStep } from "./sessions.js";

export const INBOX_COLUMNS = "id, platform, platform_message_id, session_id, payload, status, received_at, enqueued_at, completed_at, reply, reason";

const INSERT = `
  INSERT INTO inbox (platform, platform_message_id, session_id, payload, status, received_at, reason, completed_at)
  VALUES ($1, $2, $3, $4, $5, COALESCE($6::float8, ${clockSql(8)}), $7,
          CASE WHEN $7::text IS NULL THEN NULL ELSE ${clockSql(8)} END)
  ON CONFLICT (platform, platform_message_id) DO NOTHING
  RETURNING ${INBOX_COLUMNS}`;

// Several pending rows in one statement (atomic alone, ids drawn in the given order). A platform
// message given twice is inserted once: DO NOTHING skips a row that conflicts with one the same
// statement inserted.
const INSERT_MANY = `
  INSERT INTO inbox (platform, platform_message_id, session_id, payload, status, received_at)
  SELECT r.platform, r.platform_message_id, r.session_id, r.payload, 'pending', COALESCE(r.received_at, ${clockSql(6)})
    FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::float8[])
         WITH ORDINALITY AS r (platform, platform_message_id, session_id, payload, received_at, ord)
   ORDER BY r.ord
  ON CONFLICT (platform, platform_message_id) DO NOTHING
  RETURNING ${INBOX_COLUMNS}`;

// INSERT_MANY for rows given by routing key too ($6: the key, where $3 is null): each keyed row
// goes to the conversation of its key's live session (its compression-lineage root, walked up as
// sessions.ts does). When a key has no live session (only a transaction under the key's lock may
// create one), the statement inserts nothing and says so.
const INSERT_PLACED = `
  WITH RECURSIVE given AS MATERIALIZED (
    SELECT r.*, live.id AS live_id
      FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::float8[], $6::text[])
           WITH ORDINALITY AS r (platform, platform_message_id, session_id, payload, received_at, session_key, ord)
      LEFT JOIN LATERAL (
        SELECT id FROM sessions WHERE session_key = r.session_key AND ended_at IS NULL
         ORDER BY started_at DESC, seq DESC LIMIT 1
      ) live ON r.session_id IS NULL
  ),
  lineage (ord, id, depth, path) AS (
    SELECT ord, live_id, 0, ARRAY[live_id] FROM given WHERE live_id IS NOT NULL
    UNION ALL
    ${compressionParentStep("lineage.ord,")}
  ),
  placed AS MATERIALIZED (
    SELECT given.*, COALESCE(given.session_id, root.id) AS target
      FROM given
      LEFT JOIN (SELECT DISTINCT ON (ord) ord, id FROM lineage ORDER BY ord, depth DESC) root ON root.ord = given.ord
  ),
  inserted AS (
    INSERT INTO inbox (platform, platform_message_id, session_id, payload, status, received_at)
    SELECT platform, platform_message_id, target, payload, 'pending', COALESCE(received_at, ${clockSql(7)})
      FROM placed WHERE NOT EXISTS (SELECT 1 FROM placed WHERE target IS NULL)
     ORDER BY ord
    ON CONFLICT (platform, platform_message_id) DO NOTHING
    RETURNING ${INBOX_COLUMNS}
  )
  SELECT NULL::boolean AS unplaced, inserted.* FROM inserted
  UNION ALL
  SELECT true, ${INBOX_COLUMNS.split(", ").map(() => "NULL").join(", ")} WHERE EXISTS (SELECT 1 FROM placed WHERE target IS NULL)`;

const SELECT_BY_ID = `SELECT ${INBOX_COLUMNS} FROM inbox WHERE id = $1`;
const SELECT_BY_KEY = `SELECT ${INBOX_COLUMNS} FROM inbox WHERE platform = $1 AND platform_message_id = $2`;
const MARK_ENQUEUED = `UPDATE inbox SET enqueued_at = ${clockSql(2)} WHERE id = ANY ($1::bigint[])`;
const PENDING_FOR_SESSION = `SELECT ${INBOX_COLUMNS} FROM inbox WHERE session_id = $1 AND status = 'pending' ORDER BY id LIMIT $2`;
const ALL_PENDING = `SELECT ${INBOX_COLUMNS} FROM inbox WHERE status = 'pending' ORDER BY id LIMIT $1`;
const UNCLAIMED_HEADS = `
  SELECT session_id, MIN(id) AS id FROM inbox
   WHERE status = 'pending' AND received_at <= ${clockSql(3)} - $1
     AND NOT EXISTS (SELECT 1 FROM session_turn_leases l WHERE l.conversation_id = inbox.session_id)
   GROUP BY session_id ORDER BY MIN(id) LIMIT $2`;
/**
 * Only pending rows move: completion is idempotent and a settled row keeps its outcome. Parameters
 * from `$first`: ids, status, reply, reason, clock; `guard` is a further condition (or "true").
 */
export const completeInboxSql = (first: number, guard: string): string => `
  UPDATE inbox SET status = $${first + 1}, completed_at = ${clockSql(first + 4)}, reply = $${first + 2}, reason = $${first + 3}
   WHERE status = 'pending' AND id = ANY ($${first}::bigint[]) AND ${guard}`;
const COMPLETE = completeInboxSql(1, "true");
const COUNT_BY_STATUS = "SELECT status, count(*) AS n FROM inbox GROUP BY status";

/** An inbox row whose session is given (`sessionId`) or is its routing key's live one (`sessionKey`). */
export type PlacedInsert = Omit<InboxInsert, "sessionId"> & { sessionId: string | null; sessionKey: string | null };

/** The rows a multi-row insert returned, matched to the inserts: only the first of a platform message gets its row. */
function matchByKey(inserts: ReadonlyArray<Pick<InboxInsert, "platform" | "platformMessageId">>, rows: readonly StoredInboxRow[]): Array<InboxRow | null> {
  const byKey = new Map(rows.map((row) => [`${row.platform}\u0000${row.platform_message_id}`, row]));
  return inserts.map((insert) => {
    const key = `${insert.platform}\u0000${insert.platformMessageId}`;
    const row = byKey.get(key);
    byKey.delete(key);
    return row ? toInboxRow(row) : null;
  });
}

export class PgInboxSql {
  /** Insert unless the platform message exists; a duplicate returns the existing row. */
  async record(db: Queryable, insert: InboxInsert, now: number | null, rejectionReason: string | null): Promise<{ inserted: boolean; row: InboxRow }> {
    const created = await this.insert(db, insert, now, rejectionReason);
    if (created) return { inserted: true, row: created };
    return { inserted: false, row: await this.existing(db, insert) };
  }

  /** The new row; null when the platform message is already recorded (existing() reads that row). */
  async insert(db: Queryable, insert: InboxInsert, now: number | null, rejectionReason: string | null): Promise<InboxRow | null> {
    const created = await db.query<StoredInboxRow>(prepared(INSERT, [
      insert.platform,
      insert.platformMessageId,
      insert.sessionId,
      JSON.stringify(insert.payload),
      rejectionReason === null ? "pending" : "rejected",
      insert.receivedAt ?? null,
      rejectionReason,
      now,
    ]));
    return created.rows[0] ? toInboxRow(created.rows[0]) : null;
  }

  /**
   * Pending rows in one statement: for each insert its new row, or null when the platform message
   * was recorded before (or earlier in `inserts`); existing() reads those after the commit.
   */
  async insertMany(db: Queryable, inserts: readonly InboxInsert[], now: number | null): Promise<Array<InboxRow | null>> {
    if (inserts.length === 1) return [await this.insert(db, inserts[0], now, null)];
    const created = await db.query<StoredInboxRow>(prepared(INSERT_MANY, [
      inserts.map((insert) => insert.platform),
      inserts.map((insert) => insert.platformMessageId),
      inserts.map((insert) => insert.sessionId),
      inserts.map((insert) => JSON.stringify(insert.payload)),
      inserts.map((insert) => insert.receivedAt ?? null),
      now,
    ]));
    return matchByKey(inserts, created.rows);
  }

  /**
   * insertMany for rows whose session is given or comes from a routing key (`sessionKey` where
   * `sessionId` is null), in one statement. Null when a key has no live session: then nothing was
   * inserted, and the caller places the rows step by step.
   */
  async insertPlaced(db: Queryable, inserts: ReadonlyArray<PlacedInsert>, now: number | null): Promise<Array<InboxRow | null> | null> {
    const result = await db.query<StoredInboxRow & { unplaced: boolean | null }>(prepared(INSERT_PLACED, [
      inserts.map((insert) => insert.platform),
      inserts.map((insert) => insert.platformMessageId),
      inserts.map((insert) => insert.sessionId),
      inserts.map((insert) => JSON.stringify(insert.payload)),
      inserts.map((insert) => insert.receivedAt ?? null),
      inserts.map((insert) => insert.sessionKey),
      now,
    ]));
    if (result.rows.some((row) => row.unplaced === true)) return null;
    return matchByKey(inserts, result.rows);
  }

  /**
   * The row a duplicate insert found. In a statement of its own: an insert that met a row another
   * transaction had not committed waited for that commit, which only a later statement's snapshot sees.
   */
  async existing(db: Queryable, insert: Pick<InboxInsert, "platform" | "platformMessageId">): Promise<InboxRow> {
    const row = await this.find(db, insert.platform, insert.platformMessageId);
    if (!row) throw new Error(`inbox row ${insert.platform}/${insert.platformMessageId} vanished`);
    return row;
  }

  async get(db: Queryable, id: number): Promise<InboxRow | null> {
    const row = (await db.query<StoredInboxRow>(prepared(SELECT_BY_ID, [id]))).rows[0];
    return row ? toInboxRow(row) : null;
  }

  async find(db: Queryable, platform: string, platformMessageId: string): Promise<InboxRow | null> {
    const row = (await db.query<StoredInboxRow>(prepared(SELECT_BY_KEY, [platform, platformMessageId]))).rows[0];
    return row ? toInboxRow(row) : null;
  }

  async markAsEnqueued(db: Queryable, ids: number[], now: number | null): Promise<void> {
    if (ids.length > 0) await db.query(prepared(MARK_ENQUEUED, [ids, now]));
  }

  async pendingForSession(db: Queryable, sessionId: string, limit: number): Promise<InboxRow[]> {
    return (await db.query<StoredInboxRow>(prepared(PENDING_FOR_SESSION, [sessionId, limit]))).rows.map(toInboxRow);
  }

  async allPending(db: Queryable, limit: number): Promise<InboxRow[]> {
    return (await db.query<StoredInboxRow>(prepared(ALL_PENDING, [limit]))).rows.map(toInboxRow);
  }

  async unclaimedHeads(db: Queryable, olderThanSeconds: number, limit: number, now: number | null): Promise<Array<{ conversationId: string; inboxId: number }>> {
    const rows = (await db.query<{ session_id: string; id: string }>(prepared(UNCLAIMED_HEADS, [olderThanSeconds, limit, now]))).rows;
    return rows.map((r) => ({ conversationId: r.session_id, inboxId: Number(r.id) }));
  }

  /** Settles pending rows (the fenced flush's statement has this update among its own: lease.ts). */
  async completeRows(
    db: Queryable,
    ids: number[],
    status: Exclude<InboxStatus, "pending">,
    reply: string | null,
    reason: string | null,
    now: number | null,
  ): Promise<void> {
    if (ids.length > 0) await db.query(prepared(COMPLETE, [ids, status, reply, reason, now]));
  }

  async counts(db: Queryable): Promise<Record<InboxStatus, number>> {
    const counts = Object.fromEntries(INBOX_STATUSES.map((status) => [status, 0])) as Record<InboxStatus, number>;
    for (const { status, n } of (await db.query<{ status: InboxStatus; n: number }>(COUNT_BY_STATUS)).rows) counts[status] = n;
    return counts;
  }
}
