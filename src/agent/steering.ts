// Busy mode 'steer': inputs that arrived while a turn ran join it before its next model step,
// as user messages at that point of the transcript. The caller (the gateway) reads them under
// the lease and makes the turn's end records cover them.
import type { ConversationMessage } from "../state/types.js";
import { userMessageFromAdmitted } from "./messages.js";
import { withoutStoredInputs } from "./persistence.js";
import type { Turn } from "./turn.js";
import type { SteerFn } from "./turn-types.js";

/**
 * The new user messages to add before the next model call; none when nothing arrived or the read
 * failed (then the inputs stay where they were and run as the next turn). An input the transcript
 * already shows (a crashed turn stored it) is not added again.
 */
export async function takeSteeredInputs(turn: Turn, steer: SteerFn, messages: readonly ConversationMessage[]): Promise<ConversationMessage[]> {
  let inputs;
  try {
    inputs = await steer();
  } catch (err) {
    turn.emit("status", { level: "warn", text: `could not read new messages for the running turn: ${err instanceof Error ? err.message : String(err)}` });
    return [];
  }
  if (inputs.length === 0) return [];
  return withoutStoredInputs(turn, inputs.map(userMessageFromAdmitted), messages);
}
