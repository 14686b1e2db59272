// Telegram's reply steps, each on its own so a shared reply pipeline can call them: read the
// target, split the text into parts Telegram takes, post one part, edit one part. Replies are
// plain text (no parse_mode: model output is not valid Telegram markup); the possible-duplicate
// note is set in italics with an entity instead.
import type { Api } from "grammy";
import type { MessageEntity } from "grammy/types";
import { PermanentSendError } from "../../gateway/types.js";
import { POSSIBLE_DUPLICATE_NOTE } from "../shared/duplicate-marker.js";
import { splitMessage } from "../shared/split-message.js";
import { optionalString, requiredString } from "../shared/target.js";
import { call, isNotModified, isUneditable, toSendError } from "./api.js";
import { TELEGRAM_MAX_TEXT } from "./config.js";

export interface TelegramTarget {
  /** Numeric ids go out as numbers; `@channel` names as they are. */
  chatId: number | string;
  /** The forum topic the reply stays in. */
  threadId: number | null;
  /** The user's message the first part replies to. */
  replyTo: number | null;
  /** The streamed message the first part replaces. */
  editMessageId: number | null;
}

export function telegramTarget(target: Record<string, unknown>): TelegramTarget {
  const number = (key: string): number | null => {
    const value = optionalString(target, key);
    if (value === null) return null;
    const n = Number(value);
    if (!Number.isSafeInteger(n)) throw new PermanentSendError(`telegram reply target has a malformed ${key}`);
    return n;
  };
  const chat = requiredString(target, "chat_id", "telegram");
  return {
    chatId: /^-?\d+$/.test(chat) ? Number(chat) : chat,
    threadId: number("message_thread_id"),
    replyTo: number("reply_to_message_id"),
    editMessageId: number("edit_message_id"),
  };
}

/** The shared note without its markdown underscores; Telegram gets an italic entity instead. */
export const TELEGRAM_DUPLICATE_NOTE = POSSIBLE_DUPLICATE_NOTE.replace(/^_|_$/g, "");
const NOTE_SUFFIX = `\n\n${TELEGRAM_DUPLICATE_NOTE}`;

/** Parts of at most 4,096 characters; a resend that may repeat an earlier reply ends with the note. */
export function telegramReplyParts(text: string, possibleDuplicate: boolean): string[] {
  const body = text.trim() === "" ? "(empty reply)" : text;
  if (!possibleDuplicate) return splitMessage(body, TELEGRAM_MAX_TEXT);
  const parts = splitMessage(body, TELEGRAM_MAX_TEXT - NOTE_SUFFIX.length);
  parts[parts.length - 1] += NOTE_SUFFIX;
  return parts;
}

/** The duplicate note in italics, when it ends this part. */
export function partEntities(part: string): MessageEntity[] | undefined {
  if (!part.endsWith(NOTE_SUFFIX)) return undefined;
  return [{ type: "italic", offset: part.length - TELEGRAM_DUPLICATE_NOTE.length, length: TELEGRAM_DUPLICATE_NOTE.length }];
}

/** Posts one part; the first replies to the user's message. Returns the new message's id. */
export async function postPart(api: Api, target: TelegramTarget, text: string, index: number): Promise<string> {
  const entities = partEntities(text);
  const sent = await call("sendMessage", () =>
    api.sendMessage(target.chatId, text, {
      ...(target.threadId !== null ? { message_thread_id: target.threadId } : {}),
      // The reply still goes out when the user deleted the message it answers.
      ...(index === 0 && target.replyTo !== null ? { reply_parameters: { message_id: target.replyTo, allow_sending_without_reply: true } } : {}),
      ...(entities ? { entities } : {}),
      link_preview_options: { is_disabled: true },
    }),
  );
  return String(sent.message_id);
}

/**
 * Replaces a message's text. Asking for the text it already shows is success. A message that is
 * gone or frozen gets the text as a new message (its id is returned then) unless `postIfGone` is
 * false (streamed previews: the delivery that follows takes care of it).
 */
export async function editPart(
  api: Api,
  target: TelegramTarget,
  messageId: string,
  text: string,
  postIfGone = true,
): Promise<string | void> {
  const entities = partEntities(text);
  try {
    await api.editMessageText(target.chatId, Number(messageId), text, {
      ...(entities ? { entities } : {}),
      link_preview_options: { is_disabled: true },
    });
  } catch (error) {
    if (isNotModified(error)) return;
    if (postIfGone && isUneditable(error)) return postPart(api, target, text, 0);
    throw toSendError(error, "editMessageText");
  }
}

/** The typing indicator (Telegram shows it for 5 s, or until the bot's next message). */
export async function sendTyping(api: Api, target: TelegramTarget): Promise<void> {
  await call("sendChatAction", () =>
    api.sendChatAction(target.chatId, "typing", target.threadId !== null ? { message_thread_id: target.threadId } : {}),
  );
}
