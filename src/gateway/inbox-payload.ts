// The inbox stores each InboundMessage as its JSON payload; these two functions are the only
// place that converts between the two shapes.
import type { InboxRow } from "../state/types.js";
import type { InboundMessage } from "./types.js";

export type InboxPayload = Record<string, unknown>;

export function payloadOf(message: InboundMessage, extra: InboxPayload = {}): InboxPayload {
  return { ...message, ...extra };
}

/** The message an inbox row recorded (written by `payloadOf`, so the shape holds). */
export function inboundOf(row: Pick<InboxRow, "payload">): InboundMessage {
  return row.payload as unknown as InboundMessage;
}
