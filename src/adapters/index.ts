// The platform adapters, and the one place that decides which are enabled.
import type { Logger } from "pino";
import type { PlatformAdapter } from "../gateway/types.js";
import { createDiscordAdapter, type DiscordConfig } from "./discord/index.js";
import type { RateLimitGates } from "./shared/retry-after-gate.js";
import type { ThreadMemory } from "../bus/thread-memory.js";
import { createSlackAdapter, slackEnabled, type SlackConfig } from "./slack/index.js";
import type { SingletonLocks } from "../bus/singleton-lock.js";
import { createTelegramAdapter, telegramConfigFrom, type TelegramConfig } from "./telegram/index.js";
import { createWebhookAdapter, type WebhookRouteConfig } from "./webhook/index.js";
import { createWhatsAppAdapter, whatsappConfigFrom, type WhatsAppConfig } from "./whatsapp/index.js";

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
  TelegramConfigError,
  TelegramFileSchema,
  telegramConfigFrom,
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
export { createWhatsAppAdapter, whatsappConfigFrom, WhatsAppFileSchema, type WhatsAppConfig } from "./whatsapp/index.js";
export { ThrottledEditor, type MessageSink, type ThrottledEditorOptions } from "./shared/throttled-editor.js";
export { createStreamingReply, type MessagePoster } from "./shared/streaming.js";
export { InMemoryThreadMemory, type ThreadMemory } from "../bus/thread-memory.js";
export { POSSIBLE_DUPLICATE_NOTE } from "./shared/duplicate-marker.js";
export { THREADED_SESSION_PREFIXES, threadKeyForSessionKey } from "./thread-keys.js";

export interface AdaptersConfig {
  slack?: SlackConfig;
  discord?: DiscordConfig;
  telegram?: TelegramConfig;
  webhooks?: Record<string, WebhookRouteConfig>;
  whatsapp?: WhatsAppConfig;
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

/** Reads the documented environment variables (webhook routes come from the YAML file). */
export function adaptersConfigFromEnv(
  env: Record<string, string | undefined>,
  webhooks?: Record<string, WebhookRouteConfig>,
): AdaptersConfig {
  const value = (name: string) => {
    const v = env[name]?.trim();
    return v ? v : undefined;
  };
  const config: AdaptersConfig = {};
  const signingSecret = value("SLACK_SIGNING_SECRET");
  const botToken = value("SLACK_BOT_TOKEN");
  const appToken = value("SLACK_APP_TOKEN");
  if (botToken && (signingSecret || appToken)) {
    config.slack = { signingSecret, botToken, appToken, apiUrl: value("SLACK_API_URL"), botUserId: value("SLACK_BOT_USER_ID") };
  }
  const publicKey = value("DISCORD_PUBLIC_KEY");
  const discordToken = value("DISCORD_BOT_TOKEN");
  if (publicKey || discordToken) {
    config.discord = {
      publicKey,
      botToken: discordToken,
      applicationId: value("DISCORD_APPLICATION_ID"),
      apiUrl: value("DISCORD_API_URL"),
    };
  }
  const telegram = telegramConfigFrom(env);
  if (telegram) config.telegram = telegram;
  if (webhooks && Object.keys(webhooks).length > 0) config.webhooks = webhooks;
  const whatsapp = whatsappConfigFrom(env);
  if (whatsapp) config.whatsapp = whatsapp;
  return config;
}
