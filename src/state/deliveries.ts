// Outbound ledger: every reply is a row before it is sent; a claim marks the send attempt so a
// crash between sending and recording is visible as a possible duplicate on the resend.
import type { Database, Statement } from "better-sqlite3";
import { fromJson } from "./json-columns.js";
import { DELIVERY_RECEIPT_STATUSES, type DeliveryInsert, type DeliveryReceipt, type DeliveryRow } from "./types.js";

/** A deliveries row as stored: JSON as text, the flag as SQLite's 0/1 or PostgreSQL's boolean. */
export interface StoredDeliveryRow extends Omit<DeliveryRow, "target" | "possible_duplicate" | "display_metadata"> {
  target: string;
  possible_duplicate: number | boolean;
  display_metadata: string | null;
}

export function toDeliveryRow(row: StoredDeliveryRow): DeliveryRow {
  return {
    ...row,
    target: fromJson<Record<string, unknown>>(row.target) ?? {},
    possible_duplicate: Boolean(row.possible_duplicate),
    display_metadata: fromJson<Record<string, unknown>>(row.display_metadata),
  };
}

const receiptRank = (status: unknown): number => DELIVERY_RECEIPT_STATUSES.indexOf(status as DeliveryReceipt["status"]);

/**
 * A receipt merged into a row's display metadata. Reports arrive out of order, so the shown
 * status is the furthest one seen (failed is furthest), and each status keeps its first time.
 */
export function withReceipt(metadata: Record<string, unknown> | null, receipt: DeliveryReceipt): Record<string, unknown> {
  const previous = metadata ?? {};
  const times = { ...(previous.receipts as Record<string, number> | undefined) };
  times[receipt.status] ??= receipt.at;
  const furthest = receiptRank(receipt.status) > receiptRank(previous.receipt) ? receipt.status : previous.receipt;
  const merged: Record<string, unknown> = { ...previous, receipt: furthest, receipts: times };
  if (receipt.errors?.length) merged.receipt_errors = receipt.errors;
  return merged;
}

export class DeliverySql {
  private readonly insert: Statement<[Record<string, unknown>], { id: number }>;
  private readonly selectById: Statement<[number], StoredDeliveryRow>;
  private readonly claim: Statement<[number, number, number], StoredDeliveryRow>;
  private readonly markSent: Statement<[string | null, number, number]>;
  private readonly markFailed: Statement<[string, string, number, number]>;
  private readonly selectUnsent: Statement<[number], StoredDeliveryRow>;
  private readonly selectForSession: Statement<[string], StoredDeliveryRow>;
  private readonly setEditTarget: Statement<[string, number, number]>;
  private readonly selectByPlatformMessage: Statement<[string, string], StoredDeliveryRow>;
  private readonly setDisplayMetadata: Statement<[string, number, number]>;

  constructor(db: Database) {
    this.insert = db.prepare(
      `INSERT INTO deliveries (platform, session_id, inbox_id, target, text, status, attempts, created_at, updated_at)
       VALUES (@platform, @session_id, @inbox_id, @target, @text, CASE WHEN @claimed THEN 'sending' ELSE 'pending' END, @claimed, @now, @now)
       RETURNING id`,
    );
    this.selectById = db.prepare("SELECT * FROM deliveries WHERE id = ?");
    // One statement, so the claim is atomic. SET expressions see the row as it was before the
    // update: a row that was already 'sending' becomes a possible duplicate. A 'sending' row is
    // taken only once its claim is old enough (the third parameter: the newest claim time taken).
    this.claim = db.prepare(
      `UPDATE deliveries
          SET possible_duplicate = (possible_duplicate OR status = 'sending'),
              status = 'sending', attempts = attempts + 1, updated_at = ?
        WHERE id = ? AND (status = 'pending' OR (status = 'sending' AND updated_at <= ?))
        RETURNING *`,
    );
    this.markSent = db.prepare(
      "UPDATE deliveries SET status = 'sent', platform_message_id = ?, updated_at = ? WHERE id = ?",
    );
    // A row already sent stays sent: a late failure report must not resend it.
    this.markFailed = db.prepare(
      "UPDATE deliveries SET status = ?, last_error = ?, updated_at = ? WHERE id = ? AND status <> 'sent'",
    );
    this.selectUnsent = db.prepare(
      "SELECT * FROM deliveries WHERE status IN ('pending', 'sending') ORDER BY id LIMIT ?",
    );
    this.selectForSession = db.prepare("SELECT * FROM deliveries WHERE session_id = ? ORDER BY id");
    // Only before the first send attempt: a claimed row keeps the target it was sent with.
    this.setEditTarget = db.prepare(
      "UPDATE deliveries SET target = json_set(target, '$.edit_message_id', ?), updated_at = ? WHERE id = ? AND status = 'pending' AND attempts = 0",
    );
    this.selectByPlatformMessage = db.prepare(
      "SELECT * FROM deliveries WHERE platform = ? AND platform_message_id = ? ORDER BY id DESC LIMIT 1",
    );
    this.setDisplayMetadata = db.prepare("UPDATE deliveries SET display_metadata = ?, updated_at = ? WHERE id = ?");
  }

  /** Must run inside a transaction for all-or-nothing. */
  insertAll(inserts: DeliveryInsert[], now: number): number[] {
    return inserts.map((insert) => {
      const row = this.insert.get({
        platform: insert.platform,
        session_id: insert.sessionId,
        inbox_id: insert.inboxId ?? null,
        target: JSON.stringify(insert.target),
        text: insert.text,
        claimed: insert.claimed ? 1 : 0,
        now,
      });
      if (!row) throw new Error("delivery insert returned no row");
      return row.id;
    });
  }

  get(id: number): DeliveryRow | null {
    const row = this.selectById.get(id);
    return row ? toDeliveryRow(row) : null;
  }

  claimForSend(id: number, now: number, reclaimAfterSeconds: number): DeliveryRow | null {
    const row = this.claim.get(now, id, now - reclaimAfterSeconds);
    return row ? toDeliveryRow(row) : null;
  }

  recordSent(id: number, platformMessageId: string | null, now: number): void {
    this.markSent.run(platformMessageId, now, id);
  }

  recordFailure(id: number, error: string, final: boolean, now: number): void {
    this.markFailed.run(final ? "failed" : "pending", error, now, id);
  }

  /** Send the reply as an edit of an already posted (streamed) message; false when too late. */
  editInstead(id: number, messageId: string, now: number): boolean {
    return this.setEditTarget.run(messageId, now, id).changes > 0;
  }

  /** Must run inside a transaction (read, merge, write). */
  recordReceipt(platform: string, platformMessageId: string, receipt: DeliveryReceipt, now: number): DeliveryRow | null {
    const stored = this.selectByPlatformMessage.get(platform, platformMessageId);
    if (!stored) return null;
    const row = toDeliveryRow(stored);
    const metadata = withReceipt(row.display_metadata, receipt);
    this.setDisplayMetadata.run(JSON.stringify(metadata), now, row.id);
    return { ...row, display_metadata: metadata, updated_at: now };
  }

  unsent(limit: number): DeliveryRow[] {
    return this.selectUnsent.all(limit).map(toDeliveryRow);
  }

  forSession(sessionId: string): DeliveryRow[] {
    return this.selectForSession.all(sessionId).map(toDeliveryRow);
  }
}
