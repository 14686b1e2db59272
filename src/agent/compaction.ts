// Compaction: when the transcript passes a size, older messages become one summary (asked of
// the model) at the start of a CHILD session; the current session ends with end_reason
// 'compression' and the turn moves to the child, the chain's new tip. Every session of the chain
// has one conversation id (its root), so the lease is the same.
import { randomUUID } from "node:crypto";
import type { ConversationMessage } from "../state/types.js";
import { raceAbort } from "./interrupts.js";
import { modelText, nowSeconds, transcriptChars } from "./messages.js";
import { COMPACTED_NOTICE } from "./notices.js";
import type { Turn } from "./turn.js";
import type { ModelProvider } from "./types.js";

export const COMPACTION_SUMMARY_KIND = "compaction_summary";
const SUMMARY_PREFIX = "[Summary of the earlier conversation]\n";
const SUMMARY_INSTRUCTIONS =
  "You compress conversations. Summarise the conversation you are given so an assistant can carry it on: " +
  "keep facts, names, numbers, decisions, open questions and the user's preferences. Plain prose, at most 300 words.";
const MAX_CHARS_PER_MESSAGE = 2_000;

/** Where recent messages start: never on a tool result, which must follow its call. */
export function compactionSplit(history: readonly ConversationMessage[], keepRecent: number): number {
  let split = history.length - Math.max(0, keepRecent);
  while (split > 0 && history[split]?.role === "tool") split--;
  return Math.max(0, split);
}

function renderForSummary(messages: readonly ConversationMessage[]): string {
  return messages
    .map((message) => {
      const text = (modelText(message) ?? "").slice(0, MAX_CHARS_PER_MESSAGE);
      const calls = (message.tool_calls ?? []).map((call) => ` [called ${call.function.name}(${call.function.arguments})]`);
      const who = message.role === "tool" ? `tool ${message.tool_name ?? ""}`.trim() : message.role;
      const images = message.attachments?.length ? ` [${message.attachments.length} image(s)]` : "";
      return `${who}: ${text}${images}${calls.join("")}`;
    })
    .join("\n");
}

async function summarise(provider: ModelProvider, older: readonly ConversationMessage[], signal: AbortSignal): Promise<string | null> {
  try {
    const raced = await raceAbort(
      provider.complete({
        messages: [
          { role: "system", content: SUMMARY_INSTRUCTIONS },
          { role: "user", content: renderForSummary(older) },
        ],
        signal,
      }),
      signal,
    );
    if (raced.aborted) return null;
    const text = raced.value.content?.trim();
    return text ? text : null;
  } catch {
    return null;
  }
}

/** A stored message copied into the child: a new row there, the same platform id and display data. */
function copyForChild(message: ConversationMessage): ConversationMessage {
  const copy: ConversationMessage = { ...message };
  delete copy._row_id;
  delete copy.message_id;
  return copy;
}

/**
 * Returns the history the turn should continue from: the same array when nothing was compacted
 * (under the threshold, nothing old enough, the summary failed), else [summary, ...recent] stored
 * in the new child session the turn now is on.
 */
export async function compactHistory(
  turn: Turn,
  history: ConversationMessage[],
  pending: readonly ConversationMessage[],
): Promise<ConversationMessage[]> {
  const { compaction: options, store, persist, provider, platform } = turn.settings;
  const parentId = turn.sessionId;
  if (!options || !store || !persist || !parentId) return history;
  if (transcriptChars(history) + transcriptChars(pending) <= options.maxChars) return history;
  const split = compactionSplit(history, options.keepRecent);
  if (split <= 0) return history;
  // Carried inputs in the history are stored in the parent before its transcript is closed.
  if ((await turn.flush(history, history)).kind !== "ok") return history;

  const summary = await summarise(provider, history.slice(0, split), turn.signal);
  if (summary === null) return history;

  const childId = randomUUID();
  try {
    const parent = await store.getSession(parentId);
    await store.createSession(childId, {
      source: parent?.source ?? platform,
      sessionKey: parent?.session_key ?? null,
      chatId: parent?.chat_id ?? null,
      threadId: parent?.thread_id ?? null,
      userId: parent?.user_id ?? null,
      title: parent?.title ?? null,
      model: provider.model,
      parentSessionId: parentId,
    });
    // Close the parent only while this turn still owns the conversation.
    const { holder, conversationId } = turn;
    if (holder && conversationId) {
      const held = await store.refreshSessionTurnLease(conversationId, holder, { ttlSeconds: turn.settings.leaseTtlSeconds });
      if (!held) {
        turn.markLeaseLost();
        return history;
      }
    }
    await store.endSession(parentId, "compression");
  } catch (err) {
    turn.status("warn", `Could not compact the conversation: ${err instanceof Error ? err.message : String(err)}`);
    return history;
  }

  turn.moveTo(childId, true);
  // Inputs already stored in the parent (at admission, or by a crashed turn) belong to the child's transcript too.
  turn.storeAgainHere(pending);
  const compacted: ConversationMessage[] = [
    { role: "user", content: SUMMARY_PREFIX + summary, display_kind: COMPACTION_SUMMARY_KIND, timestamp: nowSeconds() },
    ...history.slice(split).map(copyForChild),
  ];
  await turn.flush(compacted, []);
  turn.status("lifecycle", COMPACTED_NOTICE);
  return compacted;
}
