// A Discord reply streamed as one message plus throttled edits; a final text longer than 2000
// characters fills the streamed message and continues in further messages.
import { splitMessage } from "../shared/split-message.js";
import { ThrottledEditor, type ThrottledEditorOptions } from "../shared/throttled-editor.js";
import type { DiscordAdapter } from "./adapter.js";
import { DISCORD_MAX_CONTENT } from "./config.js";

/** Discord allows about 5 edits per 5 s per channel. */
export const DISCORD_STREAM_EDIT_INTERVAL_MS = 1_000;

export function createDiscordStreamingReply(
  adapter: DiscordAdapter,
  target: Record<string, unknown>,
  options: Partial<ThrottledEditorOptions> = {},
): ThrottledEditor {
  return new ThrottledEditor(
    {
      post: (text) => adapter.postMessage(target, text),
      edit: async (messageId, text) => {
        const [first = "", ...rest] = splitMessage(text, DISCORD_MAX_CONTENT);
        await adapter.edit(target, messageId, first);
        for (const part of rest) await adapter.postMessage(target, part);
      },
    },
    // A reply done before its first edit would go out is posted once, final, by its delivery.
    { intervalMs: DISCORD_STREAM_EDIT_INTERVAL_MS, firstPostDelayMs: DISCORD_STREAM_EDIT_INTERVAL_MS, maxPreviewLength: DISCORD_MAX_CONTENT, ...options },
  );
}
