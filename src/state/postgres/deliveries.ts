// The outbound ledger on PostgreSQL. A claim is one UPDATE: concurrent claims of a row (two nodes
// taking the same job) queue on its row lock, and the second sees the first's 'sending' and is
// marked a possible duplicate, exactly as one SQLite writer after another.
import { toDeliveryRow, withReceipt, type StoredDeliveryRow } from "../deliveries.js";
import type { DeliveryInsert, DeliveryReceipt, DeliveryRow } from "../types.js";
import { clockSql, prepared, type Queryable } from "./connection.js";

const COLUMNS =
  "id, platform, session_id, inbox_id, target, text, status, attempts, possible_duplicate, platform_message_id, last_error, created_at, updated_at, display_metadata";

/**
 * The batch insert with its parameters from `$first`: five column arrays, the clock, the claimed
 * flags (deliveryColumns). `guard` (a WHERE clause or nothing) decides whether it writes at all.
 */
export const insertDeliveriesSql = (first: number, guard: string): string => {
  const p = (offset: number): string => `$${first + offset}`;
  return `
  INSERT INTO deliveries (platform, session_id, inbox_id, target, text, status, attempts, created_at, updated_at)
  SELECT d.platform, d.session_id, d.inbox_id, d.target, d.text,
         CASE WHEN d.claimed THEN 'sending' ELSE 'pending' END, CASE WHEN d.claimed THEN 1 ELSE 0 END,
         ${clockSql(first + 5)}, ${clockSql(first + 5)}
    FROM unnest(${p(0)}::text[], ${p(1)}::text[], ${p(2)}::bigint[], ${p(3)}::text[], ${p(4)}::text[], ${p(6)}::boolean[])
         WITH ORDINALITY AS d (platform, session_id, inbox_id, target, text, claimed, ord)
   ${guard}
   ORDER BY d.ord
  RETURNING id`;
};
const INSERT_ALL = insertDeliveriesSql(1, "");

/** insertDeliveriesSql's parameters from `$first` on, the clock among them. */
export function deliveryColumns(inserts: readonly DeliveryInsert[], now: number | null): unknown[] {
  return [
    inserts.map((d) => d.platform),
    inserts.map((d) => d.sessionId),
    inserts.map((d) => d.inboxId ?? null),
    inserts.map((d) => JSON.stringify(d.target)),
    inserts.map((d) => d.text),
    now,
    inserts.map((d) => d.claimed === true),
  ];
}

const SELECT_BY_ID = `SELECT ${COLUMNS} FROM deliveries WHERE id = $1`;
// SET expressions see the row as it was before the update: one already 'sending' becomes a possible
// duplicate. A 'sending' row is taken only once its claim is $3 seconds old.
// With no reclaim age the row is taken whatever its time: two racing claims start their
// transactions microseconds apart, and the later row version can carry the later clock.
const CLAIM = `
  UPDATE deliveries
     SET possible_duplicate = (possible_duplicate OR status = 'sending'),
         status = 'sending', attempts = attempts + 1, updated_at = ${clockSql(2)}
   WHERE id = $1 AND (status = 'pending' OR (status = 'sending' AND ($3::float8 <= 0 OR updated_at <= ${clockSql(2)} - $3::float8)))
  RETURNING ${COLUMNS}`;
const MARK_SENT = `UPDATE deliveries SET status = 'sent', platform_message_id = $2, updated_at = ${clockSql(3)} WHERE id = $1`;
// A row already sent stays sent: a late failure report must not resend it.
const MARK_FAILED = `UPDATE deliveries SET status = $2, last_error = $3, updated_at = ${clockSql(4)} WHERE id = $1 AND status <> 'sent'`;
const SELECT_UNSENT = `SELECT ${COLUMNS} FROM deliveries WHERE status IN ('pending', 'sending') ORDER BY id LIMIT $1`;
const SELECT_FOR_SESSION = `SELECT ${COLUMNS} FROM deliveries WHERE session_id = $1 ORDER BY id`;
// Only before the first send attempt: a claimed row keeps the target it was sent with.
const SET_EDIT_TARGET = `
  UPDATE deliveries
     SET target = jsonb_set(target::jsonb, '{edit_message_id}', to_jsonb($2::text))::text, updated_at = ${clockSql(3)}
   WHERE id = $1 AND status = 'pending' AND attempts = 0`;

// The row a platform's later report is about, locked until its merged metadata is written.
const SELECT_BY_PLATFORM_MESSAGE_FOR_UPDATE = `
  SELECT ${COLUMNS} FROM deliveries WHERE platform = $1 AND platform_message_id = $2 ORDER BY id LIMIT 1 FOR UPDATE`;
const SET_DISPLAY_METADATA = `UPDATE deliveries SET display_metadata = $2, updated_at = ${clockSql(3)} WHERE id = $1 RETURNING ${COLUMNS}`;

export class PgDeliverySql {
  /**
   * Returns the new ids in the order given. Run inside a transaction when it must go with other
   * writes (the fenced flush's statement has this insert among its own: lease.ts).
   */
  async insertAll(db: Queryable, inserts: DeliveryInsert[], now: number | null): Promise<number[]> {
    if (inserts.length === 0) return [];
    const result = await db.query<{ id: number }>(prepared(INSERT_ALL, deliveryColumns(inserts, now)));
    return result.rows.map((row) => row.id).sort((a, b) => a - b);
  }

  async get(db: Queryable, id: number): Promise<DeliveryRow | null> {
    const row = (await db.query<StoredDeliveryRow>(prepared(SELECT_BY_ID, [id]))).rows[0];
    return row ? toDeliveryRow(row) : null;
  }

  async claimForSend(db: Queryable, id: number, now: number | null, reclaimAfterSeconds: number): Promise<DeliveryRow | null> {
    const row = (await db.query<StoredDeliveryRow>(prepared(CLAIM, [id, now, reclaimAfterSeconds]))).rows[0];
    return row ? toDeliveryRow(row) : null;
  }

  async recordSent(db: Queryable, id: number, platformMessageId: string | null, now: number | null): Promise<void> {
    await db.query(prepared(MARK_SENT, [id, platformMessageId, now]));
  }

  async recordFailure(db: Queryable, id: number, error: string, final: boolean, now: number | null): Promise<void> {
    await db.query(prepared(MARK_FAILED, [id, final ? "failed" : "pending", error, now]));
  }

  /** Send the reply as an edit of an already posted (streamed) message; false when too late. */
  async editInstead(db: Queryable, id: number, messageId: string, now: number | null): Promise<boolean> {
    return ((await db.query(prepared(SET_EDIT_TARGET, [id, messageId, now]))).rowCount ?? 0) > 0;
  }

  async unsent(db: Queryable, limit: number): Promise<DeliveryRow[]> {
    return (await db.query<StoredDeliveryRow>(prepared(SELECT_UNSENT, [limit]))).rows.map(toDeliveryRow);
  }

  async forSession(db: Queryable, sessionId: string): Promise<DeliveryRow[]> {
    return (await db.query<StoredDeliveryRow>(prepared(SELECT_FOR_SESSION, [sessionId]))).rows.map(toDeliveryRow);
  }

  /** Must run inside a transaction (read under a row lock, merge, write). */
  async recordReceipt(db: Queryable, platform: string, platformMessageId: string, receipt: DeliveryReceipt, now: number | null): Promise<DeliveryRow | null> {
    const stored = (await db.query<StoredDeliveryRow>(prepared(SELECT_BY_PLATFORM_MESSAGE_FOR_UPDATE, [platform, platformMessageId]))).rows[0];
    if (!stored) return null;
    const row = toDeliveryRow(stored);
    const metadata = withReceipt(row.display_metadata, receipt);
    const updated = await db.query<StoredDeliveryRow>(prepared(SET_DISPLAY_METADATA, [row.id, JSON.stringify(metadata), now]));
    return toDeliveryRow(updated.rows[0]);
  }
}
