export { createWhatsAppAdapter, type WhatsAppAdapterDeps } from "./adapter.js";
export {
  DEFAULT_WHATSAPP_API_URL,
  WHATSAPP_SETTINGS,
  whatsappConfigSection,
  WhatsAppFileSchema,
  whatsappConfigFrom,
  type WhatsAppConfig,
  type WhatsAppFileSection,
} from "./config.js";
export { graphError, RATE_LIMIT_WAIT_MS, WhatsAppGraph, WhatsAppRateLimitedError, type WhatsAppLimitScope } from "./graph.js";
export { classifyWhatsAppMessage, whatsappSessionKey, type WhatsAppMessageDecision } from "./messages.js";
export { parseWhatsAppWebhook, WHATSAPP_OBJECT, type ParsedWebhook, type WhatsAppMessage, type WhatsAppStatus } from "./payload.js";
export { WHATSAPP_WEBHOOK_PATH } from "./routes.js";
export { postPart, readReplyTarget, replyParts, WHATSAPP_MAX_TEXT, WhatsAppSendGate } from "./send.js";
export { verifyWhatsAppSignature, whatsappSignature, WHATSAPP_SIGNATURE_HEADER } from "./signature.js";
