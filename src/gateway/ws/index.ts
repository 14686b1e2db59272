export { attachWebSocketHub, type WebSocketHub, type WebSocketHubDeps } from "./hub.js";
export type { Authenticate } from "./auth.js";
export type { ErrorCode } from "./frames.js";
