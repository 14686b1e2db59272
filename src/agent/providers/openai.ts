// The OpenAI-compatible model provider, on the official `openai` client.
// Streams when the caller watches deltas; the client retries 408/409/429/5xx and connection
// failures with backoff, honouring Retry-After (capped, see retry-after-cap.ts); an abort stops the
// call at once, even while the client sleeps before a retry or a stream hangs.
import OpenAI from "openai";
import type { ChatCompletionChunk, ChatCompletionCreateParamsBase } from "openai/resources/chat/completions";
import type { CompletionRequest, CompletionResult, ModelProvider } from "../types.js";
import { abortable, throwIfAborted } from "./abortable.js";
import { createModelFetch } from "./model-fetch.js";
import { ProviderAbortError, ProviderError } from "./errors.js";
import { toProviderError } from "./openai-errors.js";
import { toOpenAIMessages, toOpenAITools } from "./openai-wire.js";
import { capRetryAfter, type FetchLike } from "./retry-after-cap.js";
import { ToolCallAssembler } from "./tool-call-assembler.js";
import { without } from "../../shared/bench-without.js";

export interface OpenAIProviderOptions {
  /** e.g. https://api.openai.com/v1 */
  baseURL: string;
  apiKey: string;
  model: string;
  /** Retries after the first attempt, on 408/409/429/5xx and connection failures. Default 3. */
  maxRetries?: number;
  /** Per attempt: time to the response headers, and the longest silence inside a stream. Default 120 s. */
  timeoutMs?: number;
  temperature?: number;
  /** A Retry-After longer than this is not waited out: the call fails with a retryable ProviderError. Default 60 s. */
  maxRetryAfterMs?: number;
  /** The fetch the client uses; defaults to one on undici's `request` (model-fetch.ts). */
  fetch?: FetchLike;
}

type ChatParams = Omit<ChatCompletionCreateParamsBase, "stream" | "stream_options">;

export class OpenAIProvider implements ModelProvider {
  readonly name = "openai";
  readonly model: string;
  private readonly client: OpenAI;
  private readonly timeoutMs: number;
  private readonly temperature?: number;

  constructor(options: OpenAIProviderOptions) {
    this.model = options.model;
    this.timeoutMs = options.timeoutMs ?? 120_000;
    this.temperature = options.temperature;
    this.client = new OpenAI({
      baseURL: options.baseURL,
      apiKey: options.apiKey,
      // Never pick up organization/project headers from the ambient environment.
      organization: null,
      project: null,
      maxRetries: options.maxRetries ?? 3,
      timeout: this.timeoutMs,
      fetch: capRetryAfter(options.fetch ?? (without("buffered-fetch") ? fetch : createModelFetch()), options.maxRetryAfterMs ?? 60_000),
    });
  }

  async complete(request: CompletionRequest): Promise<CompletionResult> {
    throwIfAborted(request.signal);
    const params = this.params(request);
    try {
      return request.onDelta ? await this.streamed(params, request, request.onDelta) : await this.plain(params, request);
    } catch (err) {
      if (err instanceof CallbackError) throw err.cause;
      if (request.signal.aborted) throw err instanceof ProviderAbortError ? err : new ProviderAbortError({ cause: err });
      throw toProviderError(err);
    }
  }

  private params(request: CompletionRequest): ChatParams {
    return {
      model: request.model ?? this.model,
      messages: toOpenAIMessages(request.messages),
      ...(request.tools?.length ? { tools: toOpenAITools(request.tools) } : {}),
      ...(this.temperature !== undefined ? { temperature: this.temperature } : {}),
    };
  }

  private async plain(params: ChatParams, request: CompletionRequest): Promise<CompletionResult> {
    const pending = this.client.chat.completions.create({ ...params, stream: false }, { signal: request.signal });
    const completion = await abortable(pending, request.signal);
    const choice = completion.choices[0];
    const toolCalls = (choice?.message.tool_calls ?? []).flatMap((call) =>
      call.type === "function"
        ? [{ id: call.id, type: "function" as const, function: { name: call.function.name, arguments: call.function.arguments } }]
        : [],
    );
    return {
      content: choice?.message.content ?? null,
      toolCalls,
      finishReason: choice?.finish_reason ?? null,
      usage: completion.usage
        ? { promptTokens: completion.usage.prompt_tokens, completionTokens: completion.usage.completion_tokens }
        : undefined,
    };
  }

  private async streamed(
    params: ChatParams,
    request: CompletionRequest,
    onDelta: (text: string) => void,
  ): Promise<CompletionResult> {
    // One signal for the caller's abort and for a stream gone silent.
    const attempt = new AbortController();
    const stopOnAbort = (): void => attempt.abort(request.signal.reason);
    request.signal.addEventListener("abort", stopOnAbort, { once: true });
    let idle = false;
    // One timer for the whole stream, pushed back by every chunk (refresh() allocates nothing).
    let idleTimer: ReturnType<typeof setTimeout> | undefined;
    const armIdleTimer = (): void => {
      if (idleTimer) {
        idleTimer.refresh();
        return;
      }
      idleTimer = setTimeout(() => {
        idle = true;
        attempt.abort();
      }, this.timeoutMs);
    };

    const pending = this.client.chat.completions.create(
      { ...params, stream: true, stream_options: { include_usage: true } },
      { signal: attempt.signal },
    );
    let stream: Awaited<typeof pending> | undefined;
    let finished = false;
    try {
      stream = await abortable(pending, attempt.signal);
      const result = new StreamedResult();
      armIdleTimer();
      // The request carries attempt.signal: an abort destroys the body, which ends this loop.
      // No race per chunk against the signal, which cost a promise and a listener every chunk.
      for await (const chunk of stream) {
        armIdleTimer();
        const text = result.add(chunk);
        if (text) callDelta(onDelta, text);
      }
      finished = true;
      // The client's iterator ends quietly (without throwing) when its request is aborted.
      throwIfAborted(attempt.signal);
      return result.toCompletion();
    } catch (err) {
      if (idle && !request.signal.aborted) {
        throw new ProviderError(`the model server sent nothing for ${this.timeoutMs} ms`, {
          retryable: true,
          code: "stream_idle_timeout",
          cause: err,
        });
      }
      throw err;
    } finally {
      clearTimeout(idleTimer);
      request.signal.removeEventListener("abort", stopOnAbort);
      // Close the connection of a stream we stopped reading, so the server sees it go.
      if (stream && !finished) stream.controller.abort();
    }
  }
}

/** Collects a completion from its chunks; `add` returns the chunk's text, if any. */
class StreamedResult {
  private content = "";
  private finishReason: string | null = null;
  private usage: CompletionResult["usage"];
  private readonly toolCalls = new ToolCallAssembler();

  add(chunk: ChatCompletionChunk): string {
    if (chunk.usage) {
      this.usage = { promptTokens: chunk.usage.prompt_tokens, completionTokens: chunk.usage.completion_tokens };
    }
    const choice = chunk.choices.find((c) => c.index === 0);
    if (!choice) return "";
    if (choice.finish_reason) this.finishReason = choice.finish_reason;
    for (const call of choice.delta.tool_calls ?? []) this.toolCalls.add(call);
    const text = choice.delta.content ?? "";
    this.content += text;
    return text;
  }

  toCompletion(): CompletionResult {
    const toolCalls = this.toolCalls.result();
    return {
      // Like a non-streamed completion: no text beside tool calls is null.
      content: this.content || (toolCalls.length > 0 ? null : ""),
      toolCalls,
      finishReason: this.finishReason,
      usage: this.usage,
    };
  }
}

/** Marks an error thrown by the caller's onDelta, so it is rethrown as is, not as a ProviderError. */
class CallbackError extends Error {
  constructor(override readonly cause: unknown) {
    super("onDelta failed");
  }
}

function callDelta(onDelta: (text: string) => void, text: string): void {
  try {
    onDelta(text);
  } catch (err) {
    throw new CallbackError(err);
  }
}
