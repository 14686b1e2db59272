// The default inner loop of a turn: persist the new user input, call the model (streaming
// deltas), run the tools it asks for, repeat up to maxSteps, and end with a final assistant
// message whose flush carries the turn's extras. Every flush is fenced by the lease holder.
import type { ConversationMessage, FlushExtras, ToolCall } from "../state/types.js";
import { isAbortLike, raceAbort } from "./interrupts.js";
import { nowSeconds, toModelMessages } from "./messages.js";
import { LEASE_LOST_NOTICE, MAX_STEPS_NOTICE, PERSISTENCE_FAILURE_NOTICE, PROVIDER_FAILURE_NOTICE } from "./notices.js";
import type { ToolRegistry } from "./tools/registry.js";
import type { LoopResult, TurnContext, TurnOutcomeStatus } from "./turn-types.js";
import type { AgentEventKind, CompletionResult, ModelProvider, StatusKind, ToolSpec } from "./types.js";

/** What the loop needs from the agent. */
export interface LoopHost {
  readonly provider: ModelProvider;
  readonly tools: ToolRegistry;
  readonly maxSteps: number;
  readonly sessionId: string | null;
  readonly interruptRequested: boolean;
  readonly hardCancelRequested: boolean;
  readonly lastPersistenceErrorCause: string | null;
  flushMessagesToSessionDb(
    messages: readonly ConversationMessage[],
    conversationHistory: readonly ConversationMessage[] | null,
    extras?: FlushExtras,
  ): Promise<boolean>;
  compactHistory(
    history: ConversationMessage[],
    pending: readonly ConversationMessage[],
    signal: AbortSignal,
  ): Promise<ConversationMessage[]>;
  emit(kind: AgentEventKind, data: Record<string, unknown>): void;
  status(kind: StatusKind, text: string): void;
}

const TOOL_EVENT_PREVIEW_CHARS = 2_000;

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function toolMessage(call: ToolCall, content: string): ConversationMessage {
  return {
    role: "tool",
    content,
    tool_call_id: call.id,
    tool_name: call.function.name,
    timestamp: nowSeconds(),
  };
}

/** Runs the calls in order; every call gets a result, so the transcript stays well-formed. */
async function runToolCalls(
  host: LoopHost,
  calls: ToolCall[],
  messages: ConversationMessage[],
  ctx: TurnContext,
  interrupted: () => boolean,
): Promise<void> {
  for (const call of calls) {
    if (interrupted()) {
      messages.push(toolMessage(call, "Cancelled: the turn was interrupted before this tool ran."));
      continue;
    }
    const name = call.function.name;
    host.emit("tool.started", { call_id: call.id, name, arguments: call.function.arguments });
    const raced = await raceAbort(
      host.tools.execute(name, call.function.arguments, { signal: ctx.signal, sessionId: host.sessionId }),
      ctx.signal,
    );
    const outcome = raced.aborted
      ? { ok: false, content: "Cancelled: the turn was interrupted while this tool ran." }
      : raced.value;
    host.emit("tool.finished", {
      call_id: call.id,
      name,
      ok: outcome.ok,
      result: outcome.content.slice(0, TOOL_EVENT_PREVIEW_CHARS),
    });
    messages.push(toolMessage(call, outcome.content));
  }
}

export async function runModelLoop(
  host: LoopHost,
  _message: string | null,
  systemMessage: string | null,
  history: ConversationMessage[],
  ctx: TurnContext,
): Promise<LoopResult> {
  const interrupted = (): boolean => ctx.signal.aborted || host.interruptRequested;
  const base = interrupted() ? history : await host.compactHistory(history, ctx.userMessages, ctx.signal);
  const messages: ConversationMessage[] = [...base, ...ctx.userMessages];
  let apiCalls = 0;

  const leaseLost = (): LoopResult => ({
    finalResponse: LEASE_LOST_NOTICE,
    messages,
    apiCalls,
    completed: false,
    failed: true,
    error: "turn_lease_lost",
    failureReason: "turn_lease",
  });

  /** The last flush: what is left, plus the gateway's extras for this outcome. */
  const finish = async (status: TurnOutcomeStatus, finalResponse: string, fields: Partial<LoopResult>): Promise<LoopResult> => {
    if (host.lastPersistenceErrorCause === "turn_lease") return leaseLost();
    const extras = ctx.finalExtras ? ctx.finalExtras({ status, finalResponse }) : undefined;
    if (!(await host.flushMessagesToSessionDb(messages, base, extras))) {
      if (host.lastPersistenceErrorCause === "turn_lease") return leaseLost();
      return {
        finalResponse: status === "done" ? PERSISTENCE_FAILURE_NOTICE : finalResponse,
        messages,
        apiCalls,
        completed: false,
        failed: true,
        error: "persistence_failed",
        failureReason: "persistence",
        interrupted: fields.interrupted,
      };
    }
    if (extras) ctx.extrasFlushed = true;
    return { finalResponse, messages, apiCalls, ...fields };
  };

  /** Soft keeps the text streamed so far; hard drops it. */
  const stopMidStream = (partial: string): Promise<LoopResult> => {
    const keep = !host.hardCancelRequested && partial.length > 0;
    if (keep) {
      messages.push({ role: "assistant", content: partial, timestamp: nowSeconds(), finish_reason: "interrupted" });
    }
    return finish("interrupted", keep ? partial : "", { interrupted: true, completed: false });
  };

  // The user input is stored at admission, before the model is asked anything.
  if (!(await host.flushMessagesToSessionDb(messages, base)) && host.lastPersistenceErrorCause === "turn_lease") {
    return leaseLost();
  }

  const toolSpecs: ToolSpec[] | undefined = host.tools.size > 0 ? host.tools.specs() : undefined;
  for (let step = 1; step <= host.maxSteps; step++) {
    if (interrupted()) return stopMidStream("");
    // The last step offers no tools, so the model has to answer in text.
    const offered = step < host.maxSteps ? toolSpecs : undefined;
    let partial = "";
    let completion: CompletionResult;
    try {
      apiCalls++;
      const call = host.provider.complete({
        messages: toModelMessages(systemMessage, messages),
        tools: offered,
        signal: ctx.signal,
        onDelta: (text) => {
          if (ctx.signal.aborted || text.length === 0) return;
          partial += text;
          host.emit("delta", { text });
        },
      });
      const raced = await raceAbort(call, ctx.signal);
      if (raced.aborted) return stopMidStream(partial);
      completion = raced.value;
    } catch (err) {
      if (interrupted() || (isAbortLike(err) && ctx.signal.aborted)) return stopMidStream(partial);
      host.status("warn", PROVIDER_FAILURE_NOTICE);
      return finish("failed", PROVIDER_FAILURE_NOTICE, {
        failed: true,
        completed: false,
        error: `provider_error: ${errorText(err)}`,
        failureReason: "provider",
      });
    }

    const calls = offered ? completion.toolCalls : [];
    const content = completion.content ?? (calls.length === 0 ? partial : null);
    if (calls.length === 0) {
      if (!content && completion.toolCalls.length > 0) {
        // Out of steps and the model still only wants tools.
        return finish("failed", MAX_STEPS_NOTICE, {
          failed: true,
          completed: false,
          error: `max_steps_exceeded: ${host.maxSteps}`,
          failureReason: "max_steps",
        });
      }
      messages.push({
        role: "assistant",
        content: content ?? "",
        timestamp: nowSeconds(),
        finish_reason: completion.finishReason ?? "stop",
      });
      return finish("done", content ?? "", { completed: true });
    }

    messages.push({
      role: "assistant",
      content,
      tool_calls: calls,
      timestamp: nowSeconds(),
      finish_reason: completion.finishReason ?? "tool_calls",
    });
    await runToolCalls(host, calls, messages, ctx, interrupted);
    if (!(await host.flushMessagesToSessionDb(messages, base)) && host.lastPersistenceErrorCause === "turn_lease") {
      return leaseLost();
    }
  }
  // Only reached with maxSteps < 1, which the agent does not allow.
  return finish("failed", MAX_STEPS_NOTICE, { failed: true, completed: false, failureReason: "max_steps" });
}
