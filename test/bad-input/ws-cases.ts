// The WebSocket half of the bad-input corpus: frames a client may send, each answered with an
// error frame (a stable code) while the connection lives on; and upgrades that must be refused.
import { MAX_MESSAGE_CHARS } from "./keys.js";

export interface WsFrameCase {
  name: string;
  frame: string | Buffer;
  binary?: boolean;
  /** The error frame's code; "refused" also accepts an ack with status "rejected". */
  code: string;
  refusedAckAllowed?: boolean;
}

const f = (value: unknown): string => JSON.stringify(value);

export const wsFrameCases: WsFrameCase[] = [
  { name: "not JSON", frame: "hello there", code: "bad_json" },
  { name: "truncated JSON", frame: '{"type":"subscribe","session_id":', code: "bad_json" },
  { name: "a JSON array", frame: "[1,2,3]", code: "bad_frame" },
  { name: "a JSON number", frame: "42", code: "bad_frame" },
  { name: "no type", frame: f({ session_id: "s" }), code: "bad_frame" },
  { name: "type is a number", frame: f({ type: 5, session_id: "s" }), code: "bad_frame" },
  { name: "unknown type", frame: f({ type: "drop_tables", session_id: "s" }), code: "unknown_type" },
  { name: "type __proto__", frame: '{"type":"__proto__","session_id":"s"}', code: "unknown_type" },
  { name: "subscribe without session_id", frame: f({ type: "subscribe" }), code: "bad_frame" },
  { name: "subscribe with a numeric session_id", frame: f({ type: "subscribe", session_id: 12 }), code: "bad_frame" },
  { name: "subscribe with an empty session_id", frame: f({ type: "subscribe", session_id: "" }), code: "bad_frame" },
  { name: "subscribe with an overlong session_id", frame: f({ type: "subscribe", session_id: "s".repeat(300) }), code: "bad_frame" },
  { name: "subscribe with a control character in session_id", frame: f({ type: "subscribe", session_id: "a\u0001b" }), code: "bad_frame" },
  { name: "subscribe with a malformed since", frame: f({ type: "subscribe", session_id: "s", since: "yesterday" }), code: "bad_frame" },
  { name: "unsubscribe without session_id", frame: f({ type: "unsubscribe" }), code: "bad_frame" },
  { name: "send without text", frame: f({ type: "send", session_id: "corpus-ws" }), code: "bad_frame" },
  { name: "send with empty text", frame: f({ type: "send", session_id: "corpus-ws", text: "" }), code: "bad_frame" },
  { name: "send with a non-string text", frame: f({ type: "send", session_id: "corpus-ws", text: { $ne: null } }), code: "bad_frame" },
  { name: "send with an overlong client_message_id", frame: f({ type: "send", session_id: "corpus-ws", text: "hi", client_message_id: "c".repeat(300) }), code: "bad_frame" },
  { name: "send to a session id with path characters", frame: f({ type: "send", session_id: "../../etc/passwd", text: "hi" }), code: "bad_frame" },
  {
    name: "send with text longer than the message limit",
    frame: f({ type: "send", session_id: "corpus-ws", text: "z".repeat(MAX_MESSAGE_CHARS + 1) }),
    code: "refused",
    refusedAckAllowed: true,
  },
  { name: "interrupt with hard as a string", frame: f({ type: "interrupt", session_id: "s", hard: "yes" }), code: "bad_frame" },
  { name: "a binary frame", frame: Buffer.from(f({ type: "subscribe", session_id: "s" })), binary: true, code: "bad_frame" },
  { name: "a frame over the size limit", frame: f({ type: "send", session_id: "corpus-ws", text: "q".repeat(100 * 1024) }), code: "frame_too_large" },
];

export interface WsUpgradeCase {
  name: string;
  path: string;
  headers?: Record<string, string>;
  status: number;
}

export const wsUpgradeCases = (apiKey: string): WsUpgradeCase[] => [
  { name: "upgrade without a token", path: "/ws", status: 401 },
  { name: "upgrade with a wrong token", path: "/ws?token=nope", status: 401 },
  { name: "upgrade with a wrong bearer header", path: "/ws", headers: { authorization: "Bearer nope" }, status: 401 },
  { name: "upgrade on another path", path: `/wss?token=${apiKey}`, status: 404 },
  { name: "upgrade from another site's page, with the right key", path: `/ws?token=${apiKey}`, headers: { origin: "https://evil.example" }, status: 403 },
  { name: "upgrade from a sandboxed page (Origin: null)", path: `/ws?token=${apiKey}`, headers: { origin: "null" }, status: 403 },
  { name: "upgrade from a look-alike origin (own host as a subdomain)", path: `/ws?token=${apiKey}`, headers: { origin: "http://127.0.0.1.evil.example" }, status: 403 },
];
