// Telegram adapter settings: the schema, the environment names and the defaults, in one place.
// The bot token turns Telegram on. Updates arrive over the webhook when a secret is set, by long
// polling otherwise.
import { z } from "zod";
import { ConfigError, envValue, MIN_SECRET_CHARS, type ConfigSection, type Env } from "../../shared/config-section.js";

export interface TelegramConfig {
  /** TELEGRAM_BOT_TOKEN (`<bot id>:<secret>` from BotFather). */
  botToken: string;
  /** TELEGRAM_API_URL: the Bot API root; requests go to `<apiUrl>/bot<token>/<method>`. */
  apiUrl: string;
  /** TELEGRAM_WEBHOOK_SECRET: enables POST /telegram/webhook (checked against X-Telegram-Bot-Api-Secret-Token). */
  webhookSecret: string | null;
  /** TELEGRAM_WEBHOOK_URL: the public URL of that route; set, the gateway registers it with setWebhook at start. */
  webhookUrl: string | null;
}

export const DEFAULT_TELEGRAM_API_URL = "https://api.telegram.org";

/** Telegram's limit on a message's text. */
export const TELEGRAM_MAX_TEXT = 4096;

/** The environment variables, by setting. */
export const TELEGRAM_ENV = {
  botToken: "TELEGRAM_BOT_TOKEN",
  apiUrl: "TELEGRAM_API_URL",
  webhookSecret: "TELEGRAM_WEBHOOK_SECRET",
  webhookUrl: "TELEGRAM_WEBHOOK_URL",
} as const;

const botToken = z.string().regex(/^\d+:[A-Za-z0-9_-]+$/, "must be the token BotFather gave (<bot id>:<secret>)");
// Telegram's own rule for secret_token (up to 256 characters of A-Z a-z 0-9 _ -), with a floor of
// ours: the route's only check is this value, so a short one could be guessed.
const webhookSecret = z
  .string()
  .regex(/^[A-Za-z0-9_-]*$/, "only A-Z, a-z, 0-9, _ and -")
  .min(MIN_SECRET_CHARS, `must be at least ${MIN_SECRET_CHARS} characters`)
  .max(256, "at most 256 characters");
const webhookUrl = z.url({ protocol: /^https$/, error: "must be an https:// URL (Telegram only calls https webhooks)" });
const apiUrl = z.url({ protocol: /^https?$/ });

/** The YAML file's `telegram:` section (snake_case keys, each optional). */
export const TelegramFileSchema = z
  .object({
    bot_token: botToken.optional(),
    api_url: apiUrl.optional(),
    webhook_secret: webhookSecret.optional(),
    webhook_url: webhookUrl.optional(),
  })
  .strict();
export type TelegramFileSection = z.infer<typeof TelegramFileSchema>;

/** Telegram's settings from the environment (which wins) and the file; null when Telegram is off. */
export function telegramConfigFrom(
  env: Env,
  file: TelegramFileSection = {},
): TelegramConfig | null {
  const token = envValue(env, TELEGRAM_ENV.botToken, botToken) ?? file.bot_token;
  const secret = envValue(env, TELEGRAM_ENV.webhookSecret, webhookSecret) ?? file.webhook_secret ?? null;
  const url = envValue(env, TELEGRAM_ENV.webhookUrl, webhookUrl) ?? file.webhook_url ?? null;
  const api = envValue(env, TELEGRAM_ENV.apiUrl, apiUrl) ?? file.api_url ?? DEFAULT_TELEGRAM_API_URL;
  if (!token) {
    if (secret || url) throw new ConfigError(`${TELEGRAM_ENV.botToken}: required with ${TELEGRAM_ENV.webhookSecret} or ${TELEGRAM_ENV.webhookUrl}`);
    return null;
  }
  if (url && !secret) {
    throw new ConfigError(`${TELEGRAM_ENV.webhookSecret}: required with ${TELEGRAM_ENV.webhookUrl} (the webhook route checks it)`);
  }
  return { botToken: token, apiUrl: api.replace(/\/+$/, ""), webhookSecret: secret, webhookUrl: url };
}

/** YAML `telegram:` and the TELEGRAM_* variables; null: Telegram off. */
export const telegramConfigSection: ConfigSection<typeof TelegramFileSchema, TelegramConfig | null> = {
  schema: TelegramFileSchema,
  load: (env, file) => telegramConfigFrom(env, file),
};
