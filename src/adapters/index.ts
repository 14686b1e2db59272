// The platform adapters, and the one place that decides which are enabled.
import type { Logger } from "pino";
import type { PlatformAdapter } from "../gateway/types.js";
import { createDiscordAdapter, discordConfigSection, type DiscordConfig } from "./discord/index.js";
import type { RateLimitGates } from "./shared/retry-after-gate.js";
import type { ThreadMemory } from "../bus/thread-memory.js";
import type { SingletonLocks } from "../bus/singleton-lock.js";
import { createSlackAdapter, slackConfigSection, slackEnabled, type SlackConfig } from "./slack/index.js";
import { createTelegramAdapter, telegramConfigSection, type TelegramConfig } from "./telegram/index.js";
import { createWebhookAdapter, webhookConfigSection, type WebhookRoutes } from "./webhook/index.js";
import { createWhatsAppAdapter, whatsappConfigSection, type WhatsAppConfig } from "./whatsapp/index.js";

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

/**
 * Every adapter's config section, by its YAML key: main/config.ts composes them with the core's
 * settings. An adapter with settings adds its section here and its construction below.
 */
export const adapterConfigSections = {
  slack: slackConfigSection,
  discord: discordConfigSection,
  telegram: telegramConfigSection,
  webhooks: webhookConfigSection,
  whatsapp: whatsappConfigSection,
};

/** The adapters' settings, as the sections give them (null or absent: that adapter is off). */
export interface AdaptersConfig {
  slack?: SlackConfig | null;
  discord?: DiscordConfig | null;
  /** Webhook when a secret is set, long polling otherwise. */
  telegram?: TelegramConfig | null;
  webhooks?: WebhookRoutes;
  whatsapp?: WhatsAppConfig | null;
}

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
}

/** The adapters the config enables: Slack with a bot token and a secret or app token, Discord with a key or token, Telegram with a bot token, webhooks with routes, WhatsApp with its four credentials. */
export function createAdapters(config: AdaptersConfig, deps: AdaptersDeps): PlatformAdapter[] {
  const adapters: PlatformAdapter[] = [];
  const base = { logger: deps.logger, bodyLimitBytes: deps.bodyLimitBytes, threads: deps.threads, rateLimits: deps.rateLimits };
  if (slackEnabled(config.slack)) {
    adapters.push(createSlackAdapter(config.slack, base));
  }
  if (config.discord?.publicKey || config.discord?.botToken) {
    adapters.push(createDiscordAdapter(config.discord, base));
  }
  if (config.telegram) {
    adapters.push(createTelegramAdapter(config.telegram, { ...base, locks: deps.locks }));
  }
  if (config.webhooks && Object.keys(config.webhooks).length > 0) {
    adapters.push(createWebhookAdapter(config.webhooks, { ...base, syncTimeoutMs: deps.syncTimeoutMs }));
  }
  if (config.whatsapp) adapters.push(createWhatsAppAdapter(config.whatsapp, base));
  return adapters;
}
