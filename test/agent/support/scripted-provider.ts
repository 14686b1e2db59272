// A model provider that plays a script: each call takes the next step. A step is a result, an
// error to throw, or a function of the request (to stream deltas, wait, or check the signal).
import type { CompletionRequest, CompletionResult, ModelProvider } from "../../../src/agent/types.js";
import type { ToolCall } from "../../../src/state/types.js";

export type ScriptStep = CompletionResult | Error | ((request: CompletionRequest) => Promise<CompletionResult>);

export function reply(content: string): CompletionResult {
  return { content, toolCalls: [], finishReason: "stop" };
}

export function callTool(id: string, name: string, args: Record<string, unknown> | string): CompletionResult {
  const call: ToolCall = {
    id,
    type: "function",
    function: { name, arguments: typeof args === "string" ? args : JSON.stringify(args) },
  };
  return { content: null, toolCalls: [call], finishReason: "tool_calls" };
}

export class ScriptedProvider implements ModelProvider {
  readonly name = "scripted";
  readonly model = "scripted-model";
  readonly requests: CompletionRequest[] = [];
  private readonly steps: ScriptStep[];
  /** Used when the script runs out. */
  fallback: ScriptStep | null;

  constructor(steps: ScriptStep[] = [], fallback: ScriptStep | null = null) {
    this.steps = [...steps];
    this.fallback = fallback;
  }

  async complete(request: CompletionRequest): Promise<CompletionResult> {
    this.requests.push({ ...request, messages: request.messages.map((message) => ({ ...message })) });
    const step = this.steps.shift() ?? this.fallback;
    if (step === null) throw new Error("the script has no more steps");
    if (step instanceof Error) throw step;
    if (typeof step === "function") return step(request);
    return step;
  }
}

/** How far a stream got: chunks handed to onDelta, and whether it has ended (all sent, or stopped by an abort). */
export interface StreamProgress {
  sent: number;
  ended: boolean;
}

/** Streams `chunks` one every `delayMs`, honouring the signal only if `honourAbort`. */
export function streaming(
  chunks: string[],
  delayMs: number,
  honourAbort = true,
  progress: StreamProgress = { sent: 0, ended: false },
): (request: CompletionRequest) => Promise<CompletionResult> {
  return async (request) => {
    let text = "";
    try {
      for (const chunk of chunks) {
        await new Promise((resolve) => setTimeout(resolve, delayMs));
        if (honourAbort && request.signal.aborted) {
          const err = new Error("aborted");
          err.name = "AbortError";
          throw err;
        }
        text += chunk;
        progress.sent += 1;
        request.onDelta?.(chunk);
      }
      return reply(text);
    } finally {
      progress.ended = true;
    }
  };
}
