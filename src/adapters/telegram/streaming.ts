// A Telegram reply streamed as one message (a reply to the user's) plus throttled
// editMessageText edits, with the typing indicator kept up while the turn runs.
import type { ReplyStream } from "../../gateway/types.js";
import { createStreamingReply, type MessagePoster } from "../shared/streaming.js";
import type { ThrottledEditorOptions } from "../shared/throttled-editor.js";
import { TELEGRAM_MAX_TEXT } from "./config.js";

/** Telegram allows about one message or edit per second in a chat. */
export const TELEGRAM_STREAM_EDIT_INTERVAL_MS = 1_000;

/** Telegram's typing indicator lasts 5 s; renewed a little before it fades. */
export const TELEGRAM_TYPING_INTERVAL_MS = 4_000;

export interface TelegramStreamSource extends MessagePoster {
  typing(target: Record<string, unknown>): Promise<void>;
}

export function createTelegramStreamingReply(
  adapter: TelegramStreamSource,
  target: Record<string, unknown>,
  options: Partial<ThrottledEditorOptions> = {},
): ReplyStream {
  const editor = createStreamingReply(adapter, target, {
    intervalMs: TELEGRAM_STREAM_EDIT_INTERVAL_MS,
    // A reply done before its first edit would go out is posted once, final, by its delivery.
    firstPostDelayMs: TELEGRAM_STREAM_EDIT_INTERVAL_MS,
    maxPreviewLength: TELEGRAM_MAX_TEXT,
    ...options,
  });
  const stopTyping = keepTyping(() => adapter.typing(target));
  return {
    push: (delta) => editor.push(delta),
    async close() {
      stopTyping();
      return editor.close();
    },
    closeIfUnposted() {
      if (!editor.closeIfUnposted()) return false;
      stopTyping();
      return true;
    },
  };
}

/** Shows the typing indicator now and every few seconds until the returned function is called. */
function keepTyping(send: () => Promise<void>): () => void {
  const tick = (): void => void send().catch(() => undefined);
  tick();
  const timer = setInterval(tick, TELEGRAM_TYPING_INTERVAL_MS);
  timer.unref();
  return () => clearInterval(timer);
}
