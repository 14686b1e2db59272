// Discord channel types that matter for routing (API channel type numbers).

export const DISCORD_CHANNEL = {
  GuildText: 0,
  DM: 1,
  GroupDM: 3,
  AnnouncementThread: 10,
  PublicThread: 11,
  PrivateThread: 12,
} as const;

const THREAD_TYPES = new Set<number>([
  DISCORD_CHANNEL.AnnouncementThread,
  DISCORD_CHANNEL.PublicThread,
  DISCORD_CHANNEL.PrivateThread,
]);

export function isThreadChannel(type: number | null | undefined): boolean {
  return type !== null && type !== undefined && THREAD_TYPES.has(type);
}

/** `discord:<guild|dm>:<channel>[:<thread>]` */
export function discordSessionKey(guildId: string | null, channelId: string, threadId: string | null): string {
  const base = `discord:${guildId ?? "dm"}:${channelId}`;
  return threadId ? `${base}:${threadId}` : base;
}

export function discordThreadKey(threadId: string): string {
  return `discord-thread:${threadId}`;
}

/** Removes `<@id>` / `<@!id>` mentions of the bot and tidies the spaces left behind. */
export function stripDiscordMention(text: string, botUserId: string | null): string {
  if (!botUserId) return text.trim();
  return text
    .replace(new RegExp(`<@!?${botUserId.replace(/\D/g, "")}>`, "g"), " ")
    .replace(/[ \t]{2,}/g, " ")
    .trim();
}
