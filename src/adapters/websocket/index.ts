export { acceptSend, inboundFromSend, WEBSOCKET_PLATFORM, type SendOutcome, type SendRequest } from "./inbound.js";
