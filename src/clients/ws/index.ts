export { attachWebSocketHub, type WebSocketHub, type WebSocketHubDeps } from "./hub.js";
export type { Authenticate } from "./auth.js";
export type { FrameErrorCode } from "../../shared/error-catalogue.js";
export { acceptSend, inboundFromSend, WEBSOCKET_PLATFORM, type SendOutcome, type SendRequest } from "./send.js";
