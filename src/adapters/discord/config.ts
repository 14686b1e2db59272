// Discord adapter settings.

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
