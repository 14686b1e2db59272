// The Telegram adapter: updates over the webhook (with a secret) or by long polling (one poller
// per deployment, in the processes that run workers: transports.ts); replies through the Bot API
// as a reply to the user's message (reply.ts), streamed as throttled edits of one message, split
// at 4,096 characters.
//
// Rate limits: a 429 (`parameters.retry_after`) on a preview or a delivery holds the chat back
// in every process (shared Retry-After windows); the delivery is parked for that long by the
// ledger and sent once. Visible marks: a resend that may repeat an earlier reply ends with an
// italic note. Typing: sendChatAction while a turn streams.
import type { Logger } from "pino";
import { LocalSingletonLocks, type SingletonLocks } from "../../bus/singleton-lock.js";
import { RateLimitedError, type OutboundReply, type PlatformAdapter, type SendResult } from "../../gateway/types.js";
import { PartialSendTracker, sendParts } from "../shared/multipart-send.js";
import { RetryAfterGate, type RateLimitGates } from "../shared/retry-after-gate.js";
import type { MessagePoster } from "../shared/streaming.js";
import { createTelegramApi } from "./api.js";
import { TELEGRAM_MAX_TEXT, type TelegramConfig } from "./config.js";
import { fetchTelegramFile } from "./files.js";
import { TelegramIdentity } from "./identity.js";
import { ChatPacer } from "./pacer.js";
import { editPart, postPart, sendTyping, telegramReplyParts, telegramTarget } from "./reply.js";
import { createTelegramStreamingReply, TELEGRAM_STREAM_EDIT_INTERVAL_MS } from "./streaming.js";
import { telegramTransports } from "./transports.js";

export { TELEGRAM_POLLER_LOCK } from "./transports.js";

export interface TelegramAdapterDeps {
  logger: Logger;
  bodyLimitBytes: number;
  /** Retry-After windows shared with the other gateway processes; default: this process only. */
  rateLimits?: RateLimitGates;
  /** Where the poller's lock lives (Redis: one poller per deployment); default: this process only. */
  locks?: SingletonLocks;
  now?: () => number;
}

export interface TelegramAdapter extends PlatformAdapter, MessagePoster {
  readonly platform: "telegram";
  edit(target: Record<string, unknown>, platformMessageId: string, text: string): Promise<void>;
  typing(target: Record<string, unknown>): Promise<void>;
}

export function createTelegramAdapter(config: TelegramConfig, deps: TelegramAdapterDeps): TelegramAdapter {
  const logger = deps.logger.child({ adapter: "telegram" });
  const now = deps.now ?? Date.now;
  const api = createTelegramApi(config.botToken, config.apiUrl);
  const identity = new TelegramIdentity(api);
  const tracker = new PartialSendTracker();
  // Per chat: a 429 on a preview also holds back the delivery that follows it, in every process.
  const gate = new RetryAfterGate(deps.rateLimits?.windows("telegram"));
  const pacer = new ChatPacer(TELEGRAM_STREAM_EDIT_INTERVAL_MS, now);
  const transports = telegramTransports(config, {
    api,
    identity,
    locks: deps.locks ?? new LocalSingletonLocks(),
    bodyLimitBytes: deps.bodyLimitBytes,
    logger,
    now,
  });

  /** A preview waits its turn in the chat (the editor retries after the time given). */
  const pace = (chat: string): void => {
    gate.check(chat, "Telegram preview");
    const wait = pacer.claim(chat);
    if (wait > 0) throw new RateLimitedError(wait, "Telegram preview paced");
  };

  const adapter: TelegramAdapter = {
    platform: "telegram",
    capabilities: { threads: true, edits: true, streaming: true, typing: true },

    ...transports,

    async send(reply: OutboundReply): Promise<SendResult> {
      const target = telegramTarget(reply.target);
      const chat = String(target.chatId);
      gate.check(chat, "Telegram reply");
      const editing = target.editMessageId !== null;
      // An edit replaces text in place, so repeating it cannot duplicate anything.
      const parts = telegramReplyParts(reply.text, !editing && reply.possibleDuplicate);
      const id = await gate.track(chat, () =>
        sendParts(
          { deliveryId: reply.deliveryId, parts, editMessageId: editing ? String(target.editMessageId) : null },
          { post: (text, index) => postPart(api, target, text, index), edit: (messageId, text) => editPart(api, target, messageId, text) },
          tracker,
        ),
      );
      return { platformMessageId: id };
    },

    async postMessage(rawTarget, text) {
      const target = telegramTarget(rawTarget);
      const chat = String(target.chatId);
      pace(chat);
      return gate.track(chat, () => postPart(api, target, truncate(text), 0));
    },

    async edit(rawTarget, platformMessageId, text) {
      const target = telegramTarget(rawTarget);
      const chat = String(target.chatId);
      pace(chat);
      await gate.track(chat, () => editPart(api, target, platformMessageId, truncate(text), false));
    },

    openStream(target) {
      return createTelegramStreamingReply(adapter, target);
    },

    async typing(rawTarget) {
      const target = telegramTarget(rawTarget);
      const chat = String(target.chatId);
      gate.check(chat, "Telegram typing");
      await gate.track(chat, () => sendTyping(api, target));
    },

    fetchMedia(ref, limits) {
      return fetchTelegramFile(ref, limits, { api, botToken: config.botToken, apiUrl: config.apiUrl });
    },
  };
  return adapter;
}

function truncate(text: string): string {
  return text.length <= TELEGRAM_MAX_TEXT ? text : `${text.slice(0, TELEGRAM_MAX_TEXT - 1)}…`;
}
