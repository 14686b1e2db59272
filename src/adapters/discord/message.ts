// Gateway (discord.js) messages normalised to InboundMessages.
//
// Answered: every direct message; in guilds, messages that mention the bot (or reply to one of
// its messages), and messages in threads the bot is part of — a thread it created, or one it
// was mentioned or replied in (kept in a ThreadMemory). Ignored: bots (including itself),
// webhooks and system messages.
import type { Message } from "discord.js";
import type { InboundMessage, MediaRef } from "../../gateway/types.js";
import type { ThreadMemory } from "../../bus/thread-memory.js";
import { discordSessionKey, discordThreadKey, isThreadChannel, stripDiscordMention } from "./channels.js";

/**
 * The parts of a discord.js Message the normaliser reads, as plain data under discord.js's own
 * property names (collections as arrays), so fixtures can be JSON.
 */
export interface DiscordMessageLike {
  id: string;
  content: string;
  createdTimestamp: number;
  channelId: string;
  guildId: string | null;
  webhookId?: string | null;
  system?: boolean;
  author: { id: string; bot: boolean; username: string; globalName?: string | null };
  channel: { type: number; parentId?: string | null; ownerId?: string | null; name?: string | null };
  mentions: { users: Array<{ id: string }>; repliedUser?: { id: string } | null };
  attachments?: Array<{ id?: string | null; name?: string | null; url?: string | null; contentType?: string | null; size?: number | null }>;
}

export interface NormalisedDiscordMessage {
  message: InboundMessage;
  /** A thread the bot is now part of (remember it). */
  rememberThread: string | null;
}

export function normaliseDiscordMessage(
  message: DiscordMessageLike,
  botUserId: string | null,
  options: { threads?: ThreadMemory; now?: number; allowedBots?: ReadonlySet<string> } = {},
): NormalisedDiscordMessage | null {
  const { threads, now = Date.now() } = options;
  if (message.webhookId || message.system) return null;
  if (botUserId !== null && message.author.id === botUserId) return null;
  // Other bots only when the access policy lets them in (allow_bots).
  if (message.author.bot && !options.allowedBots?.has(`discord:${message.author.id}`)) return null;

  const isDm = message.guildId === null;
  const inThread = !isDm && isThreadChannel(message.channel.type);
  const threadId = inThread ? message.channelId : null;
  const mentioned =
    botUserId !== null &&
    (message.mentions.users.some((user) => user.id === botUserId) || message.mentions.repliedUser?.id === botUserId);

  let displayKind: string;
  if (isDm) {
    displayKind = "discord_dm";
  } else if (mentioned) {
    displayKind = "discord_mention";
  } else if (
    threadId !== null &&
    ((botUserId !== null && message.channel.ownerId === botUserId) || threads?.has(discordThreadKey(threadId)))
  ) {
    displayKind = "discord_thread_reply";
  } else {
    return null;
  }

  const text = stripDiscordMention(message.content, botUserId);
  // References only: the files are downloaded when the turn takes the message (fetchMedia).
  const attachments: MediaRef[] = (message.attachments ?? []).map((a) => ({
    id: a.id ?? undefined,
    name: a.name ?? undefined,
    url: a.url ?? undefined,
    contentType: a.contentType ?? undefined,
    size: a.size ?? undefined,
  }));
  if (text === "" && attachments.length === 0) return null;

  // A thread's session hangs under its parent channel: discord:<guild>:<parent>:<thread>.
  const channelForKey = threadId !== null ? (message.channel.parentId ?? message.channelId) : message.channelId;
  const replyTarget: Record<string, unknown> = {
    kind: "channel",
    channel_id: message.channelId,
    reply_to: message.id,
    guild_id: message.guildId,
  };
  if (threadId) replyTarget.thread_id = threadId;
  return {
    message: {
      platform: "discord",
      platformMessageId: message.id,
      sessionKey: discordSessionKey(message.guildId, channelForKey, threadId),
      chatId: message.channelId,
      threadId,
      userId: message.author.id,
      workspaceId: message.guildId,
      ...(message.author.bot ? { fromBot: true } : {}),
      text,
      attachments: attachments.length ? attachments : undefined,
      displayKind,
      displayMetadata: {
        guild_id: message.guildId,
        channel_id: message.channelId,
        channel_name: message.channel.name ?? null,
        thread_id: threadId,
        user_id: message.author.id,
        username: message.author.username,
        global_name: message.author.globalName ?? null,
        created_at: message.createdTimestamp,
      },
      receivedAt: now,
      replyTarget,
    },
    rememberThread: threadId !== null ? discordThreadKey(threadId) : null,
  };
}

/** Reads the fields the normaliser needs off a live discord.js Message. */
export function discordMessageLike(message: Message): DiscordMessageLike {
  const channel = message.channel;
  return {
    id: message.id,
    content: message.content,
    createdTimestamp: message.createdTimestamp,
    channelId: message.channelId,
    guildId: message.guildId,
    webhookId: message.webhookId,
    system: message.system,
    author: {
      id: message.author.id,
      bot: message.author.bot,
      username: message.author.username,
      globalName: message.author.globalName,
    },
    channel: {
      type: channel.type,
      parentId: "parentId" in channel ? channel.parentId : null,
      ownerId: channel.isThread() ? channel.ownerId : null,
      name: "name" in channel ? channel.name : null,
    },
    mentions: {
      users: [...message.mentions.users.values()].map((user) => ({ id: user.id })),
      repliedUser: message.mentions.repliedUser ? { id: message.mentions.repliedUser.id } : null,
    },
    attachments: [...message.attachments.values()].map((a) => ({
      id: a.id,
      name: a.name,
      url: a.url,
      contentType: a.contentType,
      size: a.size,
    })),
  };
}
