// The platform adapters, and the one place that decides which are enabled.
import type { Logger } from "pino";
import type { PlatformAdapter } from "../gateway/types.js";
import { adapterEnabled, type AdaptersConfig } from "./config-sections.js";
import { createDiscordAdapter } from "./discord/index.js";
import type { RateLimitGates } from "./shared/retry-after-gate.js";
import type { ThreadMemory } from "../bus/thread-memory.js";
import type { SingletonLocks } from "../bus/singleton-lock.js";
import { createSlackAdapter } from "./slack/index.js";
import { createTelegramAdapter } from "./telegram/index.js";
import { createWebhookAdapter } from "./webhook/index.js";
import { createWhatsAppAdapter } from "./whatsapp/index.js";

export { createSlackAdapter, createSlackStreamingReply, type SlackAdapter, type SlackConfig } from "./slack/index.js";
export {
  createDiscordAdapter,
  createDiscordStreamingReply,
  normaliseDiscordMessage,
  type DiscordAdapter,
  type DiscordConfig,
  type DiscordMessageLike,
} from "./discord/index.js";
export {
  createTelegramAdapter,
  telegramConfigSection,
  type TelegramAdapter,
  type TelegramConfig,
  type TelegramFileSection,
} from "./telegram/index.js";
export {
  createWebhookAdapter,
  parseWebhookRoutes,
  signWebhook,
  verifyWebhook,
  type WebhookRouteConfig,
} from "./webhook/index.js";
export { createWhatsAppAdapter, whatsappConfigSection, type WhatsAppConfig } from "./whatsapp/index.js";
export { ThrottledEditor, type MessageSink, type ThrottledEditorOptions } from "./shared/throttled-editor.js";
export { createStreamingReply, type MessagePoster } from "./shared/streaming.js";
export { InMemoryThreadMemory, type ThreadMemory } from "../bus/thread-memory.js";
export { POSSIBLE_DUPLICATE_NOTE } from "./shared/duplicate-marker.js";
export { THREADED_SESSION_PREFIXES, threadKeyForSessionKey } from "./thread-keys.js";

export { adapterConfigSections, adapterEnabled, type AdaptersConfig } from "./config-sections.js";

export interface AdaptersDeps {
  logger: Logger;
  bodyLimitBytes: number;
  /** Shared by Slack and Discord (keys do not collide); default: one in-memory store each. */
  threads?: ThreadMemory;
  /** Retry-After windows shared across processes; default: each adapter keeps its own. */
  rateLimits?: RateLimitGates;
  /** Locks that make one process of the deployment do a job (the Telegram poller); default: per process. */
  locks?: SingletonLocks;
  /** Default wait for sync webhook replies. */
  syncTimeoutMs?: number;
  /** Other bots whose messages are answered (`<platform>:<bot id>`, access `allow_bots`); others' are ignored. */
  allowedBots?: ReadonlySet<string>;
}

/** The adapters the config enables (adapterEnabled). A process that should load only those platforms' SDKs uses loadAdapters (load-adapters.ts). */
export function createAdapters(config: AdaptersConfig, deps: AdaptersDeps): PlatformAdapter[] {
  const adapters: PlatformAdapter[] = [];
  const base = { logger: deps.logger, bodyLimitBytes: deps.bodyLimitBytes, threads: deps.threads, rateLimits: deps.rateLimits };
  if (adapterEnabled.slack(config)) adapters.push(createSlackAdapter(config.slack, base));
  if (adapterEnabled.discord(config)) adapters.push(createDiscordAdapter(config.discord, base));
  if (adapterEnabled.telegram(config)) adapters.push(createTelegramAdapter(config.telegram, { ...base, locks: deps.locks }));
  if (adapterEnabled.webhooks(config)) adapters.push(createWebhookAdapter(config.webhooks, { ...base, syncTimeoutMs: deps.syncTimeoutMs }));
  if (adapterEnabled.whatsapp(config)) adapters.push(createWhatsAppAdapter(config.whatsapp, base));
  return adapters;
}
