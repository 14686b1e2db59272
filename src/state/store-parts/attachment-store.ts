// AttachmentStore: the bytes of images that came with inbound messages. They are written with
// the inbox row (InboxStore) and with the stored user message (TranscriptStore); read here.
import type { StoredAttachment } from "../types.js";

/** Reads of stored attachments, with their bytes. */
export interface AttachmentStore {
  /** The attachments recorded with an inbox row (by `recordInbound`), with their bytes, oldest first. */
  inboxAttachments(inboxId: number): Promise<StoredAttachment[]>;
  /** One attachment with its bytes, or null. */
  getAttachment(id: number): Promise<StoredAttachment | null>;
}
