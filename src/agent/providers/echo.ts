// The offline default model: deterministic, no network. It answers `Echo: <last user text>`,
// streamed word by word. With `toolDirectives` on (tests and demos), it calls tools when the user
// message holds a `[[tool:<name> <json-args>]]` directive (see echo-directive.ts); off by default,
// since whoever writes the message would choose the tool and its arguments.
import type { ToolCall } from "../../state/types.js";
import type { CompletionRequest, CompletionResult, ModelMessage, ModelProvider } from "../types.js";
import { sleep, throwIfAborted } from "./abortable.js";
import { parseToolDirectives } from "./echo-directive.js";

export interface EchoProviderOptions {
  /** Pause before each chunk after the first, to simulate a slow model. Default 0. */
  chunkDelayMs?: number;
  /** Obey `[[tool:...]]` directives in user messages. Default false: they are echoed as text. */
  toolDirectives?: boolean;
}

const NO_DIRECTIVES = { calls: [], text: "" } as const;

export class EchoProvider implements ModelProvider {
  readonly name = "echo";
  readonly model = "echo";
  private readonly chunkDelayMs: number;
  private readonly toolDirectives: boolean;

  constructor(options: EchoProviderOptions = {}) {
    this.chunkDelayMs = options.chunkDelayMs ?? 0;
    this.toolDirectives = options.toolDirectives ?? false;
  }

  async complete(request: CompletionRequest): Promise<CompletionResult> {
    throwIfAborted(request.signal);
    const { messages } = request;
    const lastUser = findLastIndex(messages, (m) => m.role === "user");
    const userText = lastUser >= 0 ? (messages[lastUser].content ?? "") : "";
    const directives = this.toolDirectives ? parseToolDirectives(userText) : NO_DIRECTIVES;
    // The texts alone are kept for the count: the messages themselves (a whole transcript of
    // them) would otherwise live as long as the result does.
    const texts = messages.map((m) => m.content);

    const images = lastUser >= 0 ? imageNotes(messages[lastUser]) : [];
    if (directives.calls.length === 0) return this.reply(`Echo: ${[userText, ...images].filter(Boolean).join(" ")}`, request, texts);

    const after = messages.slice(lastUser + 1);
    const asked = after.find((m) => m.role === "assistant" && (m.tool_calls?.length ?? 0) > 0);
    if (!asked) {
      const toolCalls: ToolCall[] = directives.calls.map((call, i) => ({
        id: `echo_call_${messages.length}_${i}`,
        type: "function",
        function: { name: call.name, arguments: call.arguments },
      }));
      await this.pause(request.signal);
      return { content: null, toolCalls, finishReason: "tool_calls", usage: new EchoUsage(texts, 0) };
    }

    const results = (asked.tool_calls ?? []).map((call) => {
      const answer = after.find((m) => m.role === "tool" && m.tool_call_id === call.id);
      return ` | ${call.function.name} -> ${answer?.content ?? ""}`;
    });
    return this.reply(`Echo: ${directives.text}${results.join("")}`, request, texts);
  }

  private async reply(
    text: string,
    request: CompletionRequest,
    texts: ReadonlyArray<string | null>,
  ): Promise<CompletionResult> {
    const chunks = wordChunks(text);
    for (let i = 0; i < chunks.length; i++) {
      // Without a delay the chunks go out in one go, as a fast model's would arrive in one read.
      if (i > 0 && this.chunkDelayMs > 0) await this.pause(request.signal);
      throwIfAborted(request.signal);
      request.onDelta?.(chunks[i]);
    }
    return { content: text, toolCalls: [], finishReason: "stop", usage: new EchoUsage(texts, chunks.length) };
  }

  private async pause(signal: AbortSignal): Promise<void> {
    if (this.chunkDelayMs > 0) await sleep(this.chunkDelayMs, signal);
  }
}

/**
 * The prompt's tokens are counted when asked for: the prompt is the whole transcript, so counting
 * it at every call would cost a turn time in proportion to the conversation's length, and the
 * gateway never reads them. A class, not an object literal with a getter: V8 builds such a literal
 * on a slow path.
 */
class EchoUsage {
  private counted: number | undefined;

  constructor(
    private readonly texts: ReadonlyArray<string | null>,
    readonly completionTokens: number,
  ) {}

  get promptTokens(): number {
    return (this.counted ??= this.texts.reduce((sum, text) => sum + countWords(text ?? ""), 0));
  }
}

/** `[image: image/png, 1.2 KB]` for each image of the message, so tests and demos see them arrive. */
function imageNotes(message: ModelMessage): string[] {
  return (message.images ?? []).map((image) => `[image: ${image.contentType}, ${formatSize(image.data.byteLength)}]`);
}

function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}

/** Word-sized pieces that concatenate back to exactly `text`: each word with the space before it. */
export function wordChunks(text: string): string[] {
  return text.match(/\s*\S+|\s+$/g) ?? (text ? [text] : []);
}

/** Runs of non-space, counted in place: the prompt is every message of the transcript, each turn. */
export function countWords(text: string): number {
  let words = 0;
  let inWord = false;
  for (let i = 0; i < text.length; i++) {
    const space = isSpace(text.charCodeAt(i));
    if (!space && !inWord) words++;
    inWord = !space;
  }
  return words;
}

/** What the regular expression \s matches. */
function isSpace(code: number): boolean {
  return (
    (code >= 0x09 && code <= 0x0d) || code === 0x20 || code === 0xa0 || code === 0x1680 || (code >= 0x2000 && code <= 0x200a) ||
    code === 0x2028 || code === 0x2029 || code === 0x202f || code === 0x205f || code === 0x3000 || code === 0xfeff
  );
}

function findLastIndex(messages: ModelMessage[], predicate: (m: ModelMessage) => boolean): number {
  for (let i = messages.length - 1; i >= 0; i--) if (predicate(messages[i])) return i;
  return -1;
}
