// The enabled adapters, each platform's module (and its SDK: discord.js, grammy, the Slack SDK)
// imported only when the config enables it: a gateway with Slack alone does not hold the others
// in memory. Same construction as createAdapters (index.ts), which imports them all.
import type { PlatformAdapter } from "../gateway/types.js";
import { adapterEnabled, type AdaptersConfig } from "./config-sections.js";
import type { AdaptersDeps } from "./index.js";

export async function loadAdapters(config: AdaptersConfig, deps: AdaptersDeps): Promise<PlatformAdapter[]> {
  const adapters: PlatformAdapter[] = [];
  const base = { logger: deps.logger, bodyLimitBytes: deps.bodyLimitBytes, threads: deps.threads, rateLimits: deps.rateLimits, allowedBots: deps.allowedBots };
  if (adapterEnabled.slack(config)) adapters.push((await import("./slack/index.js")).createSlackAdapter(config.slack, base));
  if (adapterEnabled.discord(config)) adapters.push((await import("./discord/index.js")).createDiscordAdapter(config.discord, base));
  if (adapterEnabled.telegram(config)) adapters.push((await import("./telegram/index.js")).createTelegramAdapter(config.telegram, { ...base, locks: deps.locks }));
  if (adapterEnabled.webhooks(config)) adapters.push((await import("./webhook/index.js")).createWebhookAdapter(config.webhooks, { ...base, syncTimeoutMs: deps.syncTimeoutMs }));
  if (adapterEnabled.whatsapp(config)) adapters.push((await import("./whatsapp/index.js")).createWhatsAppAdapter(config.whatsapp, base));
  return adapters;
}
