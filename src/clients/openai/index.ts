// The OpenAI-compatible API server adapter: POST /v1/chat/completions and GET /v1/models.
export { createApiServerRouter } from "./router.js";
export { API_PLATFORM, servedModelName, type ApiServerDeps } from "./chat-completions.js";
export { parseChatRequest, sessionIdHeader, idempotencyKeyHeader, RequestError, type ChatRequest, type SeedMessage } from "./request.js";
export { TurnEventTracker, type TurnEnd, type TurnEndKind } from "./turn-events.js";
