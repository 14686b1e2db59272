// The WebSocket protocol's frames: client frames are validated here (zod), server frames are
// built here. A frame that fails gets an error frame with a stable code; the connection lives on.
//
// Client -> server: subscribe {session_id, since?}, unsubscribe {session_id},
//   send {session_id, text, client_message_id?}, interrupt {session_id, text?, hard?}.
// Server -> client: event {id, session_id, kind, data, ts};
//   subscribed {session_id} once live delivery is in place (after any `since` replay);
//   unsubscribed {session_id}; ack {client_message_id, status: accepted|duplicate|rejected,
//   session_id, reason?} for a send; error {code, message, session_id?, client_message_id?}.
// Frames of one connection are answered in the order they were sent.
import { z } from "zod";
import type { GatewayEvent } from "../../gateway/types.js";
import { FRAME_ERRORS, type FrameErrorCode } from "../../shared/error-catalogue.js";

// The same rule as the API's X-Session-Id: a client-addressed session is one id on every surface.
const SessionId = z
  .string()
  .min(1, "session_id must not be empty")
  .max(128, "session_id is longer than 128 characters")
  .regex(/^[A-Za-z0-9._:-]+$/, "session_id may hold only letters, digits, '.', '_', ':' and '-'");

const EventId = z.string().regex(/^\d{1,20}(-\d{1,20})?$/, "since must be an event id (e.g. 1700000000000-0)");

const SubscribeFrame = z.object({ type: z.literal("subscribe"), session_id: SessionId, since: EventId.optional() });
const UnsubscribeFrame = z.object({ type: z.literal("unsubscribe"), session_id: SessionId });
const SendFrame = z.object({
  type: z.literal("send"),
  session_id: SessionId,
  text: z.string().min(1, "text must not be empty"),
  client_message_id: z.string().min(1).max(256).optional(),
});
const InterruptFrame = z.object({
  type: z.literal("interrupt"),
  session_id: SessionId,
  text: z.string().optional(),
  hard: z.boolean().optional(),
});

const SCHEMAS = {
  subscribe: SubscribeFrame,
  unsubscribe: UnsubscribeFrame,
  send: SendFrame,
  interrupt: InterruptFrame,
} as const;

export type SubscribeFrame = z.infer<typeof SubscribeFrame>;
export type UnsubscribeFrame = z.infer<typeof UnsubscribeFrame>;
export type SendFrame = z.infer<typeof SendFrame>;
export type InterruptFrame = z.infer<typeof InterruptFrame>;
export type ClientFrame = SubscribeFrame | UnsubscribeFrame | SendFrame | InterruptFrame;

export interface FrameError {
  code: FrameErrorCode;
  message: string;
}

/** The catalogue's error for `code`, with the caller's own message where it knows more. */
export function frameError(code: FrameErrorCode, message: string = FRAME_ERRORS[code]): FrameError {
  return { code, message };
}

export type ParsedFrame = { ok: true; frame: ClientFrame } | ({ ok: false } & FrameError);

function isKnownType(type: string): type is keyof typeof SCHEMAS {
  return Object.hasOwn(SCHEMAS, type);
}

/** Parse and validate one text frame. */
export function parseClientFrame(text: string): ParsedFrame {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, ...frameError("bad_json") };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return { ok: false, code: "bad_frame", message: "frame must be a JSON object" };
  }
  const type = (value as { type?: unknown }).type;
  if (typeof type !== "string") return { ok: false, code: "bad_frame", message: "frame needs a string field 'type'" };
  if (!isKnownType(type)) {
    return { ok: false, code: "unknown_type", message: `unknown frame type '${type.slice(0, 64)}'` };
  }
  const result = SCHEMAS[type].safeParse(value);
  if (!result.success) {
    const issue = result.error.issues[0];
    const field = issue?.path.join(".") || "frame";
    return { ok: false, code: "bad_frame", message: `${type}: ${field}: ${issue?.message ?? "invalid"}` };
  }
  return { ok: true, frame: result.data };
}

// ---------------------------------------------------------------------------------------------
// Server frames

/** An event frame, serialised once and shared by every client that gets it. */
export function eventFrame(event: GatewayEvent): Buffer {
  return Buffer.from(
    JSON.stringify({ type: "event", id: event.id, session_id: event.session_id, kind: event.kind, data: event.data, ts: event.ts }),
  );
}

export function errorFrame(error: FrameError, context: { session_id?: string; client_message_id?: string } = {}): string {
  return JSON.stringify({ type: "error", code: error.code, message: error.message, ...context });
}

export function ackFrame(ack: {
  client_message_id: string;
  status: "accepted" | "duplicate" | "rejected";
  session_id: string;
  reason?: string;
}): string {
  return JSON.stringify({ type: "ack", ...ack });
}

export function subscribedFrame(sessionId: string): string {
  return JSON.stringify({ type: "subscribed", session_id: sessionId });
}

export function unsubscribedFrame(sessionId: string): string {
  return JSON.stringify({ type: "unsubscribed", session_id: sessionId });
}
