// The response shapes of the OpenAI chat completions API: the whole completion and stream chunks.

export interface CompletionMeta {
  /** `chatcmpl-<inbox id>`: a retried request gets the same id. */
  id: string;
  /** Epoch seconds. */
  created: number;
  model: string;
}

const ZERO_USAGE = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };

export function completionId(inboxId: number): string {
  return `chatcmpl-${inboxId}`;
}

export function chatCompletion(meta: CompletionMeta, content: string): Record<string, unknown> {
  return {
    id: meta.id,
    object: "chat.completion",
    created: meta.created,
    model: meta.model,
    choices: [
      {
        index: 0,
        message: { role: "assistant", content, refusal: null },
        logprobs: null,
        finish_reason: "stop",
      },
    ],
    usage: ZERO_USAGE,
  };
}

export function completionChunk(meta: CompletionMeta, delta: Record<string, unknown>, finishReason: string | null = null): Record<string, unknown> {
  return {
    id: meta.id,
    object: "chat.completion.chunk",
    created: meta.created,
    model: meta.model,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
  };
}

/** The extra chunk sent when the client asked for `stream_options.include_usage`. */
export function usageChunk(meta: CompletionMeta): Record<string, unknown> {
  return { id: meta.id, object: "chat.completion.chunk", created: meta.created, model: meta.model, choices: [], usage: ZERO_USAGE };
}
