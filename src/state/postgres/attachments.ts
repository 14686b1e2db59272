// Attachments (images) on PostgreSQL, `bytea` data. The same life as in SQLite (../attachments.ts):
// recorded with the inbox row, linked by the turn's flush to the user message it stores, copied
// for a message written again (a compaction child). Writes run inside the caller's transaction.
import {
  attachmentBytes,
  attachmentsByMessage,
  toStoredAttachment,
  type ListedAttachmentRow,
  type StoredAttachmentRow,
} from "../attachments.js";
import type { AttachmentUpload, MessageAttachment, StoredAttachment } from "../types.js";
import { clockSql, prepared, type Queryable } from "./connection.js";

const COLUMNS = "id, inbox_id, session_id, message_id, content_type, size_bytes, name, data";

const INSERT_FOR_INBOX = `
  INSERT INTO attachments (inbox_id, content_type, size_bytes, name, data, created_at)
  SELECT $1, a.content_type, a.size_bytes, a.name, a.data, ${clockSql(6)}
    FROM unnest($2::text[], $3::integer[], $4::text[], $5::bytea[]) WITH ORDINALITY AS a (content_type, size_bytes, name, data, ord)
   ORDER BY a.ord`;
const INSERT_FOR_MESSAGE = `
  INSERT INTO attachments (session_id, message_id, content_type, size_bytes, name, data, created_at)
  VALUES ($1, $2, $3, $4, $5, $6, ${clockSql(7)})`;
// Only an attachment no message holds yet is linked; one that is held gets a copy instead.
const LINK = "UPDATE attachments SET session_id = $1, message_id = $2 WHERE id = $3 AND message_id IS NULL";
const COPY = `
  INSERT INTO attachments (inbox_id, session_id, message_id, content_type, size_bytes, name, data, created_at)
  SELECT NULL, $1, $2, content_type, size_bytes, name, data, ${clockSql(4)} FROM attachments WHERE id = $3`;
const SELECT_BY_ID = `SELECT ${COLUMNS} FROM attachments WHERE id = $1`;
const SELECT_FOR_INBOX = `SELECT ${COLUMNS} FROM attachments WHERE inbox_id = $1 ORDER BY id`;
const LIST_FOR_SESSION = "SELECT id, message_id, content_type, size_bytes, name FROM attachments WHERE session_id = $1 ORDER BY id";
const READ_FOR_SESSION = "SELECT id, message_id, content_type, size_bytes, name, data FROM attachments WHERE session_id = $1 ORDER BY id";

export class PgAttachmentSql {
  /** With the inbox row, in its transaction: one INSERT for all of them. */
  async insertForInbox(db: Queryable, inboxId: number, uploads: readonly AttachmentUpload[], now: number | null): Promise<void> {
    if (uploads.length === 0) return;
    await db.query(prepared(INSERT_FOR_INBOX, [
      inboxId,
      uploads.map((upload) => upload.content_type),
      uploads.map((upload) => upload.data.byteLength),
      uploads.map((upload) => upload.name ?? null),
      uploads.map((upload) => attachmentBytes(upload.data)),
      now,
    ]));
  }

  /** The message's attachments: linked when stored and free, copied when held, inserted when new. */
  async storeForMessage(db: Queryable, sessionId: string, messageId: number, attachments: readonly MessageAttachment[], now: number | null): Promise<void> {
    for (const attachment of attachments) {
      if (attachment.id !== undefined) {
        if (((await db.query(prepared(LINK, [sessionId, messageId, attachment.id]))).rowCount ?? 0) > 0) continue;
        if (((await db.query(prepared(COPY, [sessionId, messageId, attachment.id, now]))).rowCount ?? 0) > 0) continue;
      }
      if (!attachment.data) throw new Error(`attachment ${attachment.id ?? "(new)"} has no data to store`);
      const data = attachmentBytes(attachment.data);
      await db.query(prepared(INSERT_FOR_MESSAGE, [sessionId, messageId, attachment.content_type, data.byteLength, attachment.name ?? null, data, now]));
    }
  }

  async get(db: Queryable, id: number): Promise<StoredAttachment | null> {
    const row = (await db.query<StoredAttachmentRow>(prepared(SELECT_BY_ID, [id]))).rows[0];
    return row ? toStoredAttachment(row) : null;
  }

  async forInbox(db: Queryable, inboxId: number): Promise<StoredAttachment[]> {
    return (await db.query<StoredAttachmentRow>(prepared(SELECT_FOR_INBOX, [inboxId]))).rows.map(toStoredAttachment);
  }

  /** The session's attachments by message row id, with their bytes or without. */
  async bySessionMessage(db: Queryable, sessionId: string, withData: boolean): Promise<Map<number, MessageAttachment[]>> {
    const rows = (await db.query<ListedAttachmentRow>(prepared(withData ? READ_FOR_SESSION : LIST_FOR_SESSION, [sessionId]))).rows;
    return attachmentsByMessage(rows);
  }
}
