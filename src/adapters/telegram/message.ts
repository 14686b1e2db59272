// A Telegram update normalised to an InboundMessage, or the reason it is not a turn.
//
// Answered: every message in a private chat; in groups, messages that mention @<bot username>,
// replies to the bot's messages, and commands addressed as /cmd or /cmd@<bot username>. Forum
// topics are their own sessions. Captions count as text; photos (the largest size) and files
// become media references the adapter downloads when the turn runs (the gateway keeps images,
// and says why it left anything else out); their file ids also go to the display metadata.
// Not turns: edited messages, service messages (no text or caption), messages from bots, channel
// posts forwarded into their discussion group, and commands addressed to another bot. /start
// (what a Telegram client sends when a person opens the bot) is answered like /help.
import type { InboundMessage, MediaRef } from "../../gateway/types.js";
import type { TelegramEntity, TelegramMessage, TelegramUpdate } from "./updates.js";

export interface TelegramBotIdentity {
  id: number;
  /** Without the @. */
  username: string;
}

export type TelegramDecision = { kind: "ignore"; reason: string } | { kind: "message"; message: InboundMessage };

/** `telegram:<chat>` or, in a forum topic, `telegram:<chat>:<topic>`. */
export function telegramSessionKey(chatId: number, topicId: number | null): string {
  return topicId === null ? `telegram:${chatId}` : `telegram:${chatId}:${topicId}`;
}

/** The transcript's id of a message: message ids are unique only within their chat. */
export function telegramMessageKey(chatId: number, messageId: number): string {
  return `${chatId}:${messageId}`;
}

export function normaliseTelegramUpdate(update: TelegramUpdate, bot: TelegramBotIdentity, now: number): TelegramDecision {
  const message = update.message;
  if (!message) return { kind: "ignore", reason: "edited_message" in update ? "edited message" : "update type not handled" };
  // An anonymous admin's message comes "from" a placeholder bot with the group as sender_chat.
  if (message.from?.is_bot && !message.sender_chat) return { kind: "ignore", reason: "from a bot" };
  if (message.is_automatic_forward) return { kind: "ignore", reason: "channel post forwarded into its discussion group" };
  const body = textOf(message);
  if (body === null || body.text.trim() === "") return { kind: "ignore", reason: "service message or no text" };

  const command = leadingCommand(body.text, body.entities);
  if (command?.target && command.target.toLowerCase() !== bot.username.toLowerCase()) {
    return { kind: "ignore", reason: "command for another bot" };
  }
  const mentions = botMentions(body.text, body.entities, bot);
  const repliesToBot = message.reply_to_message?.from?.id === bot.id;
  const isPrivate = message.chat.type === "private";
  let displayKind: string;
  if (isPrivate) displayKind = "telegram_private";
  else if (command) displayKind = "telegram_command";
  else if (mentions.length > 0) displayKind = "telegram_mention";
  else if (repliesToBot) displayKind = "telegram_reply";
  else return { kind: "ignore", reason: "group message not addressed to the bot" };

  let text = removeRanges(body.text, mentions);
  // "/status@bot" -> "/status": the gateway's commands do not know bot names.
  if (command?.target) text = text.replace(`@${command.target}`, "");
  text = text.replace(/[ \t]{2,}/g, " ").trim();
  // Telegram clients send /start when a person opens the bot: it gets the command list.
  if (/^\/start(\s|$)/i.test(text)) text = "/help";
  if (text === "") return { kind: "ignore", reason: "nothing but the mention" };

  const chatId = message.chat.id;
  const topicId = message.is_topic_message && message.message_thread_id !== undefined ? message.message_thread_id : null;
  const files = filesOf(message);
  const replyTarget: Record<string, unknown> = { chat_id: chatId, reply_to_message_id: message.message_id };
  if (topicId !== null) replyTarget.message_thread_id = topicId;
  return {
    kind: "message",
    message: {
      platform: "telegram",
      // The update id is what Telegram redelivers: a repeat is a duplicate forever.
      platformMessageId: String(update.update_id),
      transcriptMessageId: telegramMessageKey(chatId, message.message_id),
      sessionKey: telegramSessionKey(chatId, topicId),
      chatId: String(chatId),
      threadId: topicId === null ? null : String(topicId),
      userId: message.sender_chat ? String(message.sender_chat.id) : message.from ? String(message.from.id) : null,
      text,
      attachments: files.length > 0 ? files.map(mediaRefOf) : undefined,
      displayKind,
      displayMetadata: {
        update_id: update.update_id,
        chat_id: chatId,
        chat_type: message.chat.type,
        chat_title: message.chat.title ?? null,
        message_id: message.message_id,
        message_thread_id: topicId,
        user_id: message.from?.id ?? null,
        username: message.from?.username ?? null,
        first_name: message.from?.first_name ?? null,
        date: message.date,
        ...(files.length > 0 ? { file_ids: files.map((f) => f.fileId), media: files.map((f) => f.kind) } : {}),
      },
      receivedAt: now,
      replyTarget,
    },
  };
}

interface Body {
  text: string;
  /** Undefined when Telegram sent no entity list at all. */
  entities: TelegramEntity[] | undefined;
}

/** The text, or the caption of a photo, document, video... with its entities. */
function textOf(message: TelegramMessage): Body | null {
  if (message.text !== undefined) return { text: message.text, entities: message.entities };
  if (message.caption !== undefined) return { text: message.caption, entities: message.caption_entities };
  return null;
}

interface Command {
  /** The bot the command names after `@`, or null for a bare `/cmd`. */
  target: string | null;
}

function leadingCommand(text: string, entities: TelegramEntity[] | undefined): Command | null {
  const token = entities
    ? entities.find((e) => e.type === "bot_command" && e.offset === 0)
    : /^\/[A-Za-z0-9_]+(?:@[A-Za-z0-9_]+)?/.exec(text)?.[0];
  if (token === undefined) return null;
  const word = typeof token === "string" ? token : text.slice(0, token.length);
  const at = word.indexOf("@");
  return { target: at < 0 ? null : word.slice(at + 1) };
}

interface Range {
  offset: number;
  length: number;
}

/** Where the text mentions the bot: `@username` mentions, or a text mention of its user. */
function botMentions(text: string, entities: TelegramEntity[] | undefined, bot: TelegramBotIdentity): Range[] {
  const handle = `@${bot.username}`.toLowerCase();
  if (entities) {
    return entities.filter(
      (e) =>
        (e.type === "mention" && text.slice(e.offset, e.offset + e.length).toLowerCase() === handle) ||
        (e.type === "text_mention" && e.user?.id === bot.id),
    );
  }
  const ranges: Range[] = [];
  const pattern = new RegExp(`(^|[^A-Za-z0-9_])(@${escapeRegExp(bot.username)})(?![A-Za-z0-9_])`, "gi");
  for (const match of text.matchAll(pattern)) ranges.push({ offset: (match.index ?? 0) + match[1].length, length: match[2].length });
  return ranges;
}

/** The text without the given UTF-16 ranges (entity offsets are UTF-16 code units, as JS strings). */
function removeRanges(text: string, ranges: Range[]): string {
  let out = text;
  for (const range of [...ranges].sort((a, b) => b.offset - a.offset)) {
    out = out.slice(0, range.offset) + out.slice(range.offset + range.length);
  }
  return out;
}

interface FileRef {
  kind: string;
  fileId: string;
  name?: string;
  contentType?: string;
  size?: number;
}

/** What the adapter's fetchMedia needs: the file id (getFile), with what Telegram declared. */
function mediaRefOf(file: FileRef): MediaRef {
  const ref: MediaRef = { id: file.fileId, name: file.name ?? file.kind };
  if (file.contentType) ref.contentType = file.contentType;
  if (file.size !== undefined) ref.size = file.size;
  return ref;
}

function filesOf(message: TelegramMessage): FileRef[] {
  const files: FileRef[] = [];
  // Telegram sends each photo in several sizes; the last is the largest.
  const photo = message.photo?.at(-1);
  if (photo) files.push({ kind: "photo", fileId: photo.file_id, contentType: "image/jpeg", size: photo.file_size });
  for (const kind of ["document", "video", "audio", "voice", "animation"] as const) {
    const file = message[kind];
    if (file) files.push({ kind, fileId: file.file_id, name: file.file_name, contentType: file.mime_type, size: file.file_size });
  }
  return files;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
