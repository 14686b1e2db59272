// Discord adapter settings and their config section (YAML `discord:`, DISCORD_* variables).
import { z } from "zod";
import { envValue, type ConfigSection } from "../../shared/config-section.js";

export interface DiscordConfig {
  /** DISCORD_BOT_TOKEN: the gateway bot and channel messages. */
  botToken?: string | null;
  /** DISCORD_PUBLIC_KEY (hex): verifies interaction requests; enables POST /discord/interactions. */
  publicKey?: string | null;
  /** DISCORD_APPLICATION_ID: used for follow-ups when an interaction does not carry it. */
  applicationId?: string | null;
  /** DISCORD_API_URL; default https://discord.com/api/v10 */
  apiUrl?: string | null;
}

export const DEFAULT_DISCORD_API_URL = "https://discord.com/api/v10";

/** Discord's limit on a message's content. */
export const DISCORD_MAX_CONTENT = 2000;

export function normaliseDiscordApiUrl(url: string | null | undefined): string {
  const base = url && url.trim() !== "" ? url.trim() : DEFAULT_DISCORD_API_URL;
  return base.replace(/\/+$/, "");
}

/** An application's Ed25519 public key, as the developer portal shows it. */
export const DISCORD_PUBLIC_KEY_HEX = /^[0-9a-fA-F]{64}$/;

const publicKeySchema = z.string().regex(DISCORD_PUBLIC_KEY_HEX, "must be 64 hex characters");

const discordFileSchema = z
  .object({
    bot_token: z.string().optional(),
    public_key: publicKeySchema.optional(),
    application_id: z.string().optional(),
    api_url: z.string().url().optional(),
  })
  .strict();

/** YAML `discord:` and DISCORD_BOT_TOKEN, DISCORD_PUBLIC_KEY, DISCORD_APPLICATION_ID, DISCORD_API_URL; null: Discord off. */
export const discordConfigSection: ConfigSection<typeof discordFileSchema, Required<DiscordConfig> | null> = {
  schema: discordFileSchema,
  load(env, file) {
    const botToken = envValue(env, "DISCORD_BOT_TOKEN", z.string()) ?? file?.bot_token ?? null;
    const publicKey = envValue(env, "DISCORD_PUBLIC_KEY", publicKeySchema) ?? file?.public_key ?? null;
    if (!botToken && !publicKey) return null;
    return {
      botToken,
      publicKey,
      applicationId: envValue(env, "DISCORD_APPLICATION_ID", z.string()) ?? file?.application_id ?? null,
      apiUrl: envValue(env, "DISCORD_API_URL", z.string().url()) ?? file?.api_url ?? DEFAULT_DISCORD_API_URL,
    };
  },
};
