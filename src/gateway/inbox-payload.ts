// The inbox stores each InboundMessage as its JSON payload; these two functions are the only
// place that converts between the two shapes.
import type { InboxRow } from "../state/types.js";
import type { InboundMessage } from "./types.js";

export type InboxPayload = Record<string, unknown>;

/** The JSON payload: the message without its image bytes (stored beside the row; counted here). */
export function payloadOf(message: InboundMessage, extra: InboxPayload = {}): InboxPayload {
  const { images, ...rest } = message;
  return { ...rest, ...(images?.length ? { [IMAGE_COUNT]: images.length } : {}), ...extra };
}

const IMAGE_COUNT = "image_count";

/** How many images were stored with the row (so a turn reads them only when there are some). */
export function imageCountOf(row: Pick<InboxRow, "payload">): number {
  const count = row.payload[IMAGE_COUNT];
  return typeof count === "number" ? count : 0;
}

/** The message an inbox row recorded (written by `payloadOf`, so the shape holds). */
export function inboundOf(row: Pick<InboxRow, "payload">): InboundMessage {
  return row.payload as unknown as InboundMessage;
}
