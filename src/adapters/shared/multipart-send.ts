// Sends a reply that had to be split into several messages. Progress is remembered per delivery,
// so a retry in this process (after a 429 half way through) resumes with the first unsent part
// instead of posting the earlier parts again.
import { createHash } from "node:crypto";

export interface PartOperations {
  /** Posts part number `index` (0-based) as a new message; returns its id. */
  post(text: string, index: number): Promise<string>;
  /** Edits a message; may return another id when the platform could only post a new message. */
  edit(messageId: string, text: string): Promise<string | void>;
}

interface Progress {
  fingerprint: string;
  sentIds: string[];
}

export class PartialSendTracker {
  private readonly progress = new Map<number, Progress>();

  constructor(private readonly capacity = 1_000) {}

  resume(deliveryId: number, fingerprint: string): string[] {
    const entry = this.progress.get(deliveryId);
    return entry && entry.fingerprint === fingerprint ? [...entry.sentIds] : [];
  }

  record(deliveryId: number, fingerprint: string, sentIds: string[]): void {
    this.progress.delete(deliveryId);
    this.progress.set(deliveryId, { fingerprint, sentIds: [...sentIds] });
    while (this.progress.size > this.capacity) {
      const oldest = this.progress.keys().next();
      if (oldest.done) break;
      this.progress.delete(oldest.value);
    }
  }

  forget(deliveryId: number): void {
    this.progress.delete(deliveryId);
  }
}

export interface MultipartRequest {
  deliveryId: number;
  parts: string[];
  /** When set, the first part replaces this message's text instead of being posted. */
  editMessageId: string | null;
}

/** Sends every part in order; returns the id of the first message (the edited one when editing). */
export async function sendParts(
  request: MultipartRequest,
  ops: PartOperations,
  tracker: PartialSendTracker,
): Promise<string | null> {
  const { deliveryId, parts, editMessageId } = request;
  const fingerprint = createHash("sha256")
    .update(JSON.stringify([editMessageId, parts]))
    .digest("hex");
  const sentIds = tracker.resume(deliveryId, fingerprint);
  for (let index = sentIds.length; index < parts.length; index++) {
    const text = parts[index];
    if (index === 0 && editMessageId !== null) {
      sentIds.push((await ops.edit(editMessageId, text)) ?? editMessageId);
    } else {
      sentIds.push(await ops.post(text, index));
    }
    tracker.record(deliveryId, fingerprint, sentIds);
  }
  tracker.forget(deliveryId);
  return sentIds[0] ?? null;
}
