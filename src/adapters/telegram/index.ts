export { createTelegramAdapter, TELEGRAM_POLLER_LOCK, type TelegramAdapter, type TelegramAdapterDeps } from "./adapter.js";
export {
  DEFAULT_TELEGRAM_API_URL,
  TELEGRAM_ENV,
  TELEGRAM_MAX_TEXT,
  telegramConfigSection,
  TelegramFileSchema,
  telegramConfigFrom,
  type TelegramConfig,
  type TelegramFileSection,
} from "./config.js";
export { normaliseTelegramUpdate, telegramMessageKey, telegramSessionKey, type TelegramBotIdentity, type TelegramDecision } from "./message.js";
export { parseTelegramUpdate, TELEGRAM_ALLOWED_UPDATES, type TelegramUpdate } from "./updates.js";
export { TelegramPoller, type TelegramPollerOptions } from "./poller.js";
export { TELEGRAM_DUPLICATE_NOTE, telegramReplyParts } from "./reply.js";
export { TELEGRAM_SECRET_HEADER, TELEGRAM_WEBHOOK_PATH } from "./routes.js";
export { TELEGRAM_COMMANDS } from "./setup.js";
export { createTelegramStreamingReply, TELEGRAM_STREAM_EDIT_INTERVAL_MS, TELEGRAM_TYPING_INTERVAL_MS } from "./streaming.js";
