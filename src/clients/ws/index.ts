export { attachWebSocketHub, type WebSocketHub, type WebSocketHubDeps } from "./hub.js";
export type { Authenticate } from "./auth.js";
export type { ErrorCode } from "./frames.js";
export { acceptSend, inboundFromSend, WEBSOCKET_PLATFORM, type SendOutcome, type SendRequest } from "./send.js";
