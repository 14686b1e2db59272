// The default inner loop of a turn: persist the new user input, call the model (streaming
// deltas), run the tools it asks for, repeat up to maxSteps, and end with a final assistant
// message whose flush carries the turn's end records. Every flush is fenced by the lease holder.
import type { ConversationMessage, ToolCall } from "../state/types.js";
import { compactHistory } from "./compaction.js";
import { isAbortLike, raceAbort } from "./interrupts.js";
import { nowSeconds, platformIdOf, toModelMessages } from "./messages.js";
import { LEASE_LOST_NOTICE, MAX_STEPS_NOTICE, PERSISTENCE_FAILURE_NOTICE, PROVIDER_FAILURE_NOTICE } from "./notices.js";
import { takeSteeredInputs } from "./steering.js";
import type { Turn } from "./turn.js";
import type { LoopResult, TurnContext, TurnOutcomeStatus, TurnUsage } from "./turn-types.js";
import type { CompletionResult, ToolSpec } from "./types.js";

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
async function runToolCalls(turn: Turn, calls: ToolCall[], messages: ConversationMessage[], interrupted: () => boolean): Promise<void> {
  for (const call of calls) {
    if (interrupted()) {
      messages.push(toolMessage(call, "Cancelled: the turn was interrupted before this tool ran."));
      continue;
    }
    const name = call.function.name;
    turn.emit("tool.started", { call_id: call.id, name, arguments: call.function.arguments });
    const raced = await raceAbort(
      turn.settings.tools.execute(name, call.function.arguments, { signal: turn.signal, sessionId: turn.sessionId }),
      turn.signal,
    );
    const outcome = raced.aborted
      ? { ok: false, content: "Cancelled: the turn was interrupted while this tool ran." }
      : raced.value;
    turn.emit("tool.finished", {
      call_id: call.id,
      name,
      ok: outcome.ok,
      result: outcome.content.slice(0, TOOL_EVENT_PREVIEW_CHARS),
    });
    messages.push(toolMessage(call, outcome.content));
  }
}

export async function runModelLoop(
  _message: string | null,
  systemMessage: string | null,
  history: ConversationMessage[],
  ctx: TurnContext,
): Promise<LoopResult> {
  const { turn } = ctx;
  const { provider, maxSteps } = turn.settings;
  const tools = ctx.overrides?.tools ?? turn.settings.tools;
  const model = ctx.overrides?.model;
  const interrupted = (): boolean => turn.signal.aborted || turn.interruptRequested;
  const base = interrupted() ? history : await compactHistory(turn, history, ctx.userMessages);
  const messages: ConversationMessage[] = [...base, ...ctx.userMessages];
  let apiCalls = 0;
  const usage: TurnUsage = { modelCalls: 0, promptTokens: 0, completionTokens: 0, toolCalls: 0 };

  const leaseLost = (): LoopResult => ({
    finalResponse: LEASE_LOST_NOTICE,
    messages,
    apiCalls,
    completed: false,
    failed: true,
    error: "turn_lease_lost",
    failureReason: "turn_lease",
  });

  /** The last flush: what is left, plus the gateway's end records for this outcome. */
  const finish = async (status: TurnOutcomeStatus, finalResponse: string, fields: Partial<LoopResult>): Promise<LoopResult> => {
    if (turn.leaseLost) return leaseLost();
    const endRecords = ctx.endRecords ? ctx.endRecords({ status, finalResponse, usage: { ...usage } }) : undefined;
    const flushed = await turn.flush(messages, base, endRecords);
    if (flushed.kind === "leaseLost") return leaseLost();
    if (flushed.kind === "failed") {
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
    return { finalResponse, messages, apiCalls, usage: { ...usage }, ...fields };
  };

  /** Soft keeps the text streamed so far; hard drops it. */
  const stopMidStream = (partial: string): Promise<LoopResult> => {
    const keep = !turn.hardCancelRequested && partial.length > 0;
    if (keep) {
      messages.push({ role: "assistant", content: partial, timestamp: nowSeconds(), finish_reason: "interrupted" });
    }
    return finish("interrupted", keep ? partial : "", { interrupted: true, completed: false });
  };

  // The user input is stored at admission, before the model is asked anything.
  if ((await turn.flush(messages, base)).kind === "leaseLost") return leaseLost();

  const toolSpecs: ToolSpec[] | undefined = tools.size > 0 ? tools.specs() : undefined;
  for (let step = 1; step <= maxSteps; step++) {
    if (interrupted()) return stopMidStream("");
    if (step > 1 && ctx.steer) {
      // Busy mode 'steer': messages that arrived meanwhile join here, stored before the model sees them.
      const steered = await takeSteeredInputs(turn, ctx.steer, messages);
      if (steered.length > 0) {
        messages.push(...steered);
        if ((await turn.flush(messages, base)).kind === "leaseLost") return leaseLost();
        turn.emit("turn.steered", { inputs: steered.length, platform_message_ids: steered.map(platformIdOf) });
      }
    }
    // The last step offers no tools, so the model has to answer in text.
    const offered = step < maxSteps ? toolSpecs : undefined;
    let partial = "";
    let completion: CompletionResult;
    try {
      apiCalls++;
      const call = provider.complete({
        messages: toModelMessages(systemMessage, messages),
        tools: offered,
        signal: turn.signal,
        ...(model ? { model } : {}),
        onDelta: (text) => {
          if (turn.signal.aborted || text.length === 0) return;
          // `offset`: where this piece starts in the step's text, so a listener can spot a gap.
          turn.emit("delta", { text, offset: partial.length });
          partial += text;
        },
      });
      const raced = await raceAbort(call, turn.signal);
      if (raced.aborted) return stopMidStream(partial);
      completion = raced.value;
      usage.modelCalls++;
      usage.promptTokens += completion.usage?.promptTokens ?? 0;
      usage.completionTokens += completion.usage?.completionTokens ?? 0;
    } catch (err) {
      if (interrupted() || (isAbortLike(err) && turn.signal.aborted)) return stopMidStream(partial);
      turn.status("warn", PROVIDER_FAILURE_NOTICE);
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
          error: `max_steps_exceeded: ${maxSteps}`,
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
    usage.toolCalls += calls.length;
    await runToolCalls(turn, calls, messages, interrupted);
    if ((await turn.flush(messages, base)).kind === "leaseLost") return leaseLost();
  }
  // Only reached with maxSteps < 1, which the agent does not allow.
  return finish("failed", MAX_STEPS_NOTICE, { failed: true, completed: false, failureReason: "max_steps" });
}
