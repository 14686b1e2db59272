// Attachments (images) kept with their message. Ingress records them with the inbox row; the
// turn's flush links them to the user message it stores (or copies them, for a message written
// again, e.g. into a compaction child). Writes run inside the caller's transaction.
import type { Database, Statement } from "better-sqlite3";
import type { AttachmentUpload, MessageAttachment, StoredAttachment } from "./types.js";

export interface StoredAttachmentRow {
  id: number;
  inbox_id: number | null;
  session_id: string | null;
  message_id: number | null;
  content_type: string;
  size_bytes: number;
  name: string | null;
  data: Buffer;
}

/** A session's attachment as listed (bytes only when asked for); the PostgreSQL backend reads the same shape. */
export type ListedAttachmentRow = Omit<StoredAttachmentRow, "data" | "inbox_id" | "session_id"> & { data?: Buffer };

/** The bytes as a Buffer over the same memory (what both database drivers bind as a blob). */
export function attachmentBytes(data: Uint8Array): Buffer {
  return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
}

export function toStoredAttachment(row: StoredAttachmentRow): StoredAttachment {
  return { ...row };
}

/** A session's attachments by message row id (rows in id order; ones no message holds are left out). */
export function attachmentsByMessage(rows: readonly ListedAttachmentRow[]): Map<number, MessageAttachment[]> {
  const byMessage = new Map<number, MessageAttachment[]>();
  for (const row of rows) {
    if (row.message_id === null) continue;
    const attachment: MessageAttachment = { id: row.id, content_type: row.content_type, size_bytes: row.size_bytes, name: row.name };
    if (row.data) attachment.data = row.data;
    const list = byMessage.get(row.message_id);
    if (list) list.push(attachment);
    else byMessage.set(row.message_id, [attachment]);
  }
  return byMessage;
}

export class AttachmentSql {
  private readonly insert: Statement<[Record<string, unknown>]>;
  private readonly link: Statement<[string, number, number]>;
  private readonly copy: Statement<[string, number, number, number]>;
  private readonly selectById: Statement<[number], StoredAttachmentRow>;
  private readonly selectForInbox: Statement<[number], StoredAttachmentRow>;
  private readonly listForSession: Statement<[string], ListedAttachmentRow>;
  private readonly readForSession: Statement<[string], ListedAttachmentRow>;

  constructor(db: Database) {
    this.insert = db.prepare(
      `INSERT INTO attachments (inbox_id, session_id, message_id, content_type, size_bytes, name, data, created_at)
       VALUES (@inbox_id, @session_id, @message_id, @content_type, @size_bytes, @name, @data, @now)`,
    );
    // Only an attachment no message holds yet is linked; one that is held gets a copy instead.
    this.link = db.prepare("UPDATE attachments SET session_id = ?, message_id = ? WHERE id = ? AND message_id IS NULL");
    this.copy = db.prepare(
      `INSERT INTO attachments (inbox_id, session_id, message_id, content_type, size_bytes, name, data, created_at)
       SELECT NULL, ?, ?, content_type, size_bytes, name, data, ? FROM attachments WHERE id = ?`,
    );
    this.selectById = db.prepare("SELECT id, inbox_id, session_id, message_id, content_type, size_bytes, name, data FROM attachments WHERE id = ?");
    this.selectForInbox = db.prepare(
      "SELECT id, inbox_id, session_id, message_id, content_type, size_bytes, name, data FROM attachments WHERE inbox_id = ? ORDER BY id",
    );
    this.listForSession = db.prepare(
      "SELECT id, message_id, content_type, size_bytes, name FROM attachments WHERE session_id = ? ORDER BY id",
    );
    this.readForSession = db.prepare(
      "SELECT id, message_id, content_type, size_bytes, name, data FROM attachments WHERE session_id = ? ORDER BY id",
    );
  }

  /** With the inbox row, in its transaction. */
  insertForInbox(inboxId: number, uploads: readonly AttachmentUpload[], now: number): void {
    for (const upload of uploads) {
      this.insert.run({
        inbox_id: inboxId,
        session_id: null,
        message_id: null,
        content_type: upload.content_type,
        size_bytes: upload.data.byteLength,
        name: upload.name ?? null,
        data: attachmentBytes(upload.data),
        now,
      });
    }
  }

  /** The message's attachments: linked when stored and free, copied when held, inserted when new. */
  storeForMessage(sessionId: string, messageId: number, attachments: readonly MessageAttachment[], now: number): void {
    for (const attachment of attachments) {
      if (attachment.id !== undefined) {
        if (this.link.run(sessionId, messageId, attachment.id).changes > 0) continue;
        if (this.copy.run(sessionId, messageId, now, attachment.id).changes > 0) continue;
      }
      if (!attachment.data) throw new Error(`attachment ${attachment.id ?? "(new)"} has no data to store`);
      this.insert.run({
        inbox_id: null,
        session_id: sessionId,
        message_id: messageId,
        content_type: attachment.content_type,
        size_bytes: attachment.data.byteLength,
        name: attachment.name ?? null,
        data: attachmentBytes(attachment.data),
        now,
      });
    }
  }

  get(id: number): StoredAttachment | null {
    const row = this.selectById.get(id);
    return row ? toStoredAttachment(row) : null;
  }

  forInbox(inboxId: number): StoredAttachment[] {
    return this.selectForInbox.all(inboxId).map(toStoredAttachment);
  }

  /** The session's attachments by message row id, with their bytes or without. */
  bySessionMessage(sessionId: string, withData: boolean): Map<number, MessageAttachment[]> {
    return attachmentsByMessage((withData ? this.readForSession : this.listForSession).all(sessionId));
  }
}
