// The TurnResult of each way a turn ends, and the event that announces it.
import type { ConversationMessage } from "../state/types.js";
import {
  LEASE_ERROR_NOTICE,
  LEASE_TIMEOUT_LIFECYCLE,
  LEASE_TIMEOUT_NOTICE,
  WAIT_CANCELLED_NOTICE,
  WAIT_INTERRUPTED_NOTICE,
} from "./notices.js";
import type { Turn } from "./turn.js";
import type { LoopResult, TurnOutcomeStatus, TurnResult } from "./turn-types.js";

export function outcomeOf(result: LoopResult): TurnOutcomeStatus {
  if (result.failed) return "failed";
  if (result.interrupted) return "interrupted";
  return "done";
}

function baseResult(turn: Turn, messages: ConversationMessage[]): TurnResult {
  return {
    finalResponse: "",
    messages,
    completed: false,
    failed: false,
    interrupted: false,
    interruptMessage: null,
    error: null,
    failureReason: null,
    apiCalls: 0,
    sessionId: turn.sessionId,
    deliveryIds: [],
  };
}

/** The loop ran: its result, failed when the lease was lost or the end records were not stored. */
export function loopTurnResult(turn: Turn, loop: LoopResult, endRecordsMissing: boolean): TurnResult {
  const interrupted = loop.interrupted === true;
  let failed = loop.failed === true;
  let failureReason = loop.failureReason ?? null;
  let error = loop.error ?? null;
  if (turn.leaseLost) {
    failed = true;
    failureReason = "turn_lease";
    error ??= "turn_lease_lost";
  } else if (endRecordsMissing && !failed) {
    failed = true;
    failureReason = "persistence";
    error ??= `persistence_failed: ${turn.lastFlushError ?? "unknown"}`;
  }
  const result: TurnResult = {
    finalResponse: loop.finalResponse,
    messages: loop.messages,
    completed: failed ? false : (loop.completed ?? !interrupted),
    failed,
    interrupted,
    interruptMessage: interrupted ? turn.interruptMessage : null,
    error,
    failureReason,
    apiCalls: loop.apiCalls ?? 0,
    sessionId: turn.sessionId,
    deliveryIds: [...turn.deliveryIds],
    endRecordsStored: turn.endRecordsStored,
  };
  if (failed) {
    turn.emit("turn.failed", { error, failure_reason: failureReason, final_response: result.finalResponse });
  } else if (interrupted) {
    turn.emit("turn.interrupted", { message: result.interruptMessage, final_response: result.finalResponse });
  } else {
    turn.emit("turn.completed", { final_response: result.finalResponse });
  }
  return result;
}

/** admittedInput found nothing to do: no turn ran. */
export function skippedResult(turn: Turn, history: ConversationMessage[]): TurnResult {
  return { ...baseResult(turn, history), completed: true, skipped: true };
}

/** `giveUpWhenHeld` met a live holder: nothing ran, nothing was held, nothing is said. */
export function heldElsewhereResult(turn: Turn, history: ConversationMessage[]): TurnResult {
  return { ...skippedResult(turn, history), heldElsewhere: true };
}

export function failedBeforeLoop(turn: Turn, history: ConversationMessage[], error: string, reason: string, notice: string): TurnResult {
  turn.emit("turn.failed", { error, failure_reason: reason, final_response: notice });
  return { ...baseResult(turn, history), failed: true, error, failureReason: reason, finalResponse: notice };
}

/** Nothing ran and nothing is released: the lease was never ours. */
export function leaseTimeoutResult(turn: Turn, sessionId: string, history: ConversationMessage[]): TurnResult {
  turn.status("lifecycle", LEASE_TIMEOUT_LIFECYCLE);
  turn.status("warn", LEASE_TIMEOUT_NOTICE);
  return failedBeforeLoop(turn, history, `session_turn_lease_timeout:${sessionId}`, "lease_timeout", LEASE_TIMEOUT_NOTICE);
}

export function leaseErrorResult(turn: Turn, message: string, history: ConversationMessage[]): TurnResult {
  turn.status("warn", LEASE_ERROR_NOTICE);
  return failedBeforeLoop(turn, history, `session_turn_lease_error:${message}`, "lease_error", LEASE_ERROR_NOTICE);
}

/**
 * Interrupted while waiting: the unadmitted user input is carried in `messages` (flagged), so
 * the caller hands it to the next turn, which stores it exactly once. A hard cancel drops it.
 */
export function waitAbortedResult(turn: Turn, history: ConversationMessage[]): TurnResult {
  const hard = turn.hardCancelRequested;
  const messages = [...history];
  const carried = hard ? null : turn.carriedInput();
  if (carried) messages.push(carried);
  const finalResponse = hard ? WAIT_CANCELLED_NOTICE : WAIT_INTERRUPTED_NOTICE;
  turn.emit("turn.interrupted", { message: turn.interruptMessage, final_response: finalResponse });
  return {
    ...baseResult(turn, messages),
    interrupted: true,
    interruptMessage: turn.interruptMessage,
    finalResponse,
  };
}
