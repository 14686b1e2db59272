// A streamed reply on any adapter that can post and edit plain messages.
import { ThrottledEditor, type ThrottledEditorOptions } from "./throttled-editor.js";

/** Adapters whose messages can be streamed as throttled edits. */
export interface MessagePoster {
  /** Posts `text` to `target` (a reply target from an InboundMessage); returns the message id. */
  postMessage(target: Record<string, unknown>, text: string): Promise<string>;
  edit(target: Record<string, unknown>, platformMessageId: string, text: string): Promise<void>;
}

export function createStreamingReply(
  poster: MessagePoster,
  target: Record<string, unknown>,
  options: ThrottledEditorOptions,
): ThrottledEditor {
  return new ThrottledEditor(
    {
      post: (text) => poster.postMessage(target, text),
      edit: (messageId, text) => poster.edit(target, messageId, text),
    },
    options,
  );
}
