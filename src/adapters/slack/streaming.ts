// A Slack reply streamed as one message in its thread plus throttled chat.update edits.
import { ThrottledEditor, type ThrottledEditorOptions } from "../shared/throttled-editor.js";
import { createStreamingReply } from "../shared/streaming.js";
import type { SlackAdapter } from "./adapter.js";

/** Slack allows roughly one chat.update per second per channel (Tier 3 / special limits). */
export const SLACK_STREAM_EDIT_INTERVAL_MS = 1_200;

export function createSlackStreamingReply(
  adapter: SlackAdapter,
  target: Record<string, unknown>,
  options: Partial<ThrottledEditorOptions> = {},
): ThrottledEditor {
  // The first post waits as long as an edit would: a reply done by then is posted once, final,
  // by its delivery (one chat.postMessage instead of a post and a chat.update).
  return createStreamingReply(adapter, target, { intervalMs: SLACK_STREAM_EDIT_INTERVAL_MS, firstPostDelayMs: SLACK_STREAM_EDIT_INTERVAL_MS, ...options });
}
