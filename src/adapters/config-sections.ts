// The adapters' config sections and which adapters a config enables, without the platforms' SDKs:
// the configuration loader and the lazy loader (load-adapters.ts) read these, so a process loads
// discord.js, grammy or the Slack SDK only when that platform is configured.
import { discordConfigSection, type DiscordConfig } from "./discord/config.js";
import { slackConfigSection, slackEnabled, type SlackConfig } from "./slack/config.js";
import { telegramConfigSection, type TelegramConfig } from "./telegram/config.js";
import { webhookConfigSection, type WebhookRoutes } from "./webhook/config.js";
import { whatsappConfigSection, type WhatsAppConfig } from "./whatsapp/config.js";

/**
 * Every adapter's config section, by its YAML key: main/config.ts composes them with the core's
 * settings. An adapter with settings adds its section here and its construction in index.ts and load-adapters.ts.
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

/** Slack with a bot token and a secret or app token, Discord with a key or token, Telegram with a bot token, webhooks with routes, WhatsApp with its four credentials. */
export const adapterEnabled = {
  slack: (config: AdaptersConfig): config is AdaptersConfig & { slack: SlackConfig } => slackEnabled(config.slack),
  discord: (config: AdaptersConfig): config is AdaptersConfig & { discord: DiscordConfig } => Boolean(config.discord?.publicKey || config.discord?.botToken),
  telegram: (config: AdaptersConfig): config is AdaptersConfig & { telegram: TelegramConfig } => Boolean(config.telegram),
  webhooks: (config: AdaptersConfig): config is AdaptersConfig & { webhooks: WebhookRoutes } => Boolean(config.webhooks && Object.keys(config.webhooks).length > 0),
  whatsapp: (config: AdaptersConfig): config is AdaptersConfig & { whatsapp: WhatsAppConfig } => Boolean(config.whatsapp),
};
