export { createWebhookAdapter, type WebhookAdapterDeps } from "./adapter.js";
export { callbackMessageId, postCallback } from "./callback.js";
export { parseWebhookRoutes, webhookConfigSection, WebhookRouteSchema, type WebhookRouteConfig, type WebhookRoutes } from "./config.js";
export { parseWebhookBody, WebhookBodySchema, type WebhookBody } from "./body.js";
export { DEFAULT_SYNC_TIMEOUT_MS, toInboundMessage, webhookAnswer, type WebhookAnswer } from "./answer.js";
export {
  githubSignature,
  signWebhook,
  standardSignature,
  standardWebhookKey,
  STANDARD_WEBHOOK_TOLERANCE_SECONDS,
  verifyGithubSignature,
  verifyStandardSignature,
  verifyWebhook,
  type VerifyResult,
  type WebhookStyle,
} from "./signing.js";
