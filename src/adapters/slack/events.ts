// Turns Slack Events API payloads into InboundMessages, or says why an event is ignored.
//
// Answered: `app_mention`s; direct messages (`channel_type: im`); replies in threads the bot is
// part of — a thread the bot was mentioned in or replied in (kept in a ThreadMemory), or a
// thread whose parent message is the bot's (`parent_user_id`). Ignored: bots (including
// ourselves), message subtypes other than file shares and thread broadcasts, and channel
// `message` events that mention the bot (the matching `app_mention` event answers those).
import { z } from "zod";
import type { InboundMessage, MediaRef } from "../../gateway/types.js";
import type { ThreadMemory } from "../../bus/thread-memory.js";

const SlackFileSchema = z.looseObject({
  id: z.string().optional(),
  name: z.string().optional(),
  url_private: z.string().optional(),
  mimetype: z.string().optional(),
  size: z.number().optional(),
});

export const SlackEventSchema = z.looseObject({
  type: z.string(),
  subtype: z.string().optional(),
  user: z.string().optional(),
  bot_id: z.string().optional(),
  text: z.string().optional(),
  ts: z.string().optional(),
  thread_ts: z.string().optional(),
  parent_user_id: z.string().optional(),
  channel: z.string().optional(),
  channel_type: z.string().optional(),
  team: z.string().optional(),
  hidden: z.boolean().optional(),
  files: z.array(SlackFileSchema).optional(),
});
export type SlackEvent = z.infer<typeof SlackEventSchema>;

export const SlackEnvelopeSchema = z.looseObject({
  type: z.string(),
  challenge: z.string().optional(),
  team_id: z.string().optional(),
  api_app_id: z.string().optional(),
  event_id: z.string().optional(),
  event_time: z.number().optional(),
  event: SlackEventSchema.optional(),
  authorizations: z
    .array(z.looseObject({ user_id: z.string().optional(), is_bot: z.boolean().optional() }))
    .optional(),
});
export type SlackEnvelope = z.infer<typeof SlackEnvelopeSchema>;

/** Subtypes that are still a person writing to the bot. */
const ANSWERED_SUBTYPES = new Set(["file_share", "thread_broadcast"]);

export type SlackEventDecision =
  | { kind: "accept"; message: InboundMessage; rememberThread: string | null }
  | { kind: "ignore"; reason: string };

export interface SlackEventContext {
  botUserId: string | null;
  threads: ThreadMemory;
  now: number;
  /** Other bots whose messages are answered (`slack:<bot id>`); default: none. */
  allowedBots?: ReadonlySet<string>;
}

/** The key under which a thread is remembered. */
export function slackThreadKey(team: string, channel: string, threadTs: string): string {
  return `${team}:${channel}:${threadTs}`;
}

/** The bot user id Slack lists in the envelope's authorizations, if any. */
export function botUserIdFromAuthorizations(envelope: SlackEnvelope): string | null {
  const bot = envelope.authorizations?.find((a) => a.is_bot && a.user_id);
  return bot?.user_id ?? null;
}

/** Removes mentions of the bot (`<@U123>` or `<@U123|name>`); without a known id, only a leading one. */
export function stripBotMention(text: string, botUserId: string | null): string {
  const cleaned = botUserId
    ? text.replace(new RegExp(`<@${escapeRegExp(botUserId)}(\\|[^>]*)?>`, "g"), " ")
    : text.replace(/^\s*<@[UW][A-Z0-9]+(\|[^>]*)?>/, " ");
  return cleaned.replace(/[ \t]{2,}/g, " ").trim();
}

function escapeRegExp(value: string): string {
  return value.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function mentions(text: string, botUserId: string | null): boolean {
  return botUserId !== null && new RegExp(`<@${escapeRegExp(botUserId)}(\\|[^>]*)?>`).test(text);
}

export function classifySlackEvent(envelope: SlackEnvelope, ctx: SlackEventContext): SlackEventDecision {
  const event = envelope.event;
  if (!event) return { kind: "ignore", reason: "event_callback without event" };
  if (event.type !== "app_mention" && event.type !== "message") {
    return { kind: "ignore", reason: `event type ${event.type} is not answered` };
  }
  if (ctx.botUserId && event.user === ctx.botUserId) return { kind: "ignore", reason: "the bot's own message" };
  const fromBot = Boolean(event.bot_id) || event.subtype === "bot_message";
  if (fromBot && !(event.bot_id && ctx.allowedBots?.has(`slack:${event.bot_id}`))) return { kind: "ignore", reason: "message from a bot" };
  if (event.hidden || (event.subtype && !ANSWERED_SUBTYPES.has(event.subtype) && !(fromBot && event.subtype === "bot_message"))) {
    return { kind: "ignore", reason: `message subtype ${event.subtype ?? "hidden"}` };
  }
  const { channel, ts } = event;
  // A legacy bot_message carries the bot's id only.
  const user = event.user ?? (fromBot ? event.bot_id : undefined);
  if (!user || !channel || !ts) return { kind: "ignore", reason: "event without user, channel or ts" };
  const team = envelope.team_id ?? event.team ?? "unknown";
  const rawText = event.text ?? "";
  if (envelope.event_id === undefined) return { kind: "ignore", reason: "event without event_id" };

  let threadTs: string | null;
  let displayKind: string;
  let rememberThread: string | null = null;
  if (event.type === "app_mention") {
    // A top-level mention starts a thread under the mentioning message.
    threadTs = event.thread_ts ?? ts;
    displayKind = "slack_mention";
    rememberThread = slackThreadKey(team, channel, threadTs);
  } else if (event.channel_type === "im") {
    // A direct message conversation is one session; a thread inside it is its own.
    threadTs = event.thread_ts ?? null;
    displayKind = "slack_dm";
  } else {
    if (mentions(rawText, ctx.botUserId)) {
      return { kind: "ignore", reason: "mention: answered through its app_mention event" };
    }
    if (!event.thread_ts) return { kind: "ignore", reason: "channel message not addressed to the bot" };
    const key = slackThreadKey(team, channel, event.thread_ts);
    const botsThread = ctx.botUserId !== null && event.parent_user_id === ctx.botUserId;
    if (!botsThread && !ctx.threads.has(key)) {
      return { kind: "ignore", reason: "reply in a thread the bot is not part of" };
    }
    threadTs = event.thread_ts;
    displayKind = "slack_thread_reply";
    rememberThread = key;
  }

  const text = stripBotMention(rawText, ctx.botUserId);
  // References only: the files are downloaded when the turn takes the message (fetchMedia).
  const attachments: MediaRef[] = (event.files ?? []).map((file) => ({
    id: file.id,
    name: file.name,
    url: file.url_private,
    contentType: file.mimetype,
    size: file.size,
  }));
  if (text === "" && attachments.length === 0) return { kind: "ignore", reason: "empty message" };

  const sessionKey = threadTs ? `slack:${team}:${channel}:${threadTs}` : `slack:${team}:${channel}`;
  const replyTarget: Record<string, unknown> = { team, channel };
  if (threadTs) replyTarget.thread_ts = threadTs;
  const message: InboundMessage = {
    platform: "slack",
    platformMessageId: envelope.event_id,
    sessionKey,
    chatId: channel,
    threadId: threadTs,
    userId: user,
    workspaceId: team,
    ...(fromBot ? { fromBot: true } : {}),
    text,
    attachments: attachments.length ? attachments : undefined,
    displayKind,
    displayMetadata: {
      team,
      channel,
      channel_type: event.channel_type ?? null,
      user,
      ts,
      thread_ts: threadTs,
      event_type: event.type,
    },
    receivedAt: ctx.now,
    replyTarget,
  };
  return { kind: "accept", message, rememberThread };
}
