// Checks shared by the fault tests: a session's transcript holds each of its messages exactly
// once, in the order they were received, each followed by the one answer that echoes it.
import type { SessionStore } from "../../src/state/types.js";

/** Problems found in one session's transcript; empty when it is right. */
export async function transcriptProblems(store: SessionStore, sessionId: string, expectedTexts: string[]): Promise<string[]> {
  const rows = await store.getMessages(await store.resolveTip(sessionId));
  const problems: string[] = [];
  const turns = rows.filter((m) => m.role === "user" || (m.role === "assistant" && m.content));
  const users = turns.filter((m) => m.role === "user").map((m) => m.content ?? "");
  if (JSON.stringify(users) !== JSON.stringify(expectedTexts)) {
    problems.push(`${sessionId}: user messages ${JSON.stringify(users)} instead of ${JSON.stringify(expectedTexts)}`);
    return problems;
  }
  const ids = rows.filter((m) => m.role === "user").map((m) => m.platform_message_id);
  if (new Set(ids).size !== ids.length) problems.push(`${sessionId}: a platform message id is stored twice`);
  for (let i = 0; i < turns.length; i += 2) {
    const user = turns[i];
    const answer = turns[i + 1];
    if (user.role !== "user" || answer?.role !== "assistant") {
      problems.push(`${sessionId}: row ${i} is not a user message followed by one answer`);
      break;
    }
    if (!answer.content?.includes(user.content ?? "\u0000")) problems.push(`${sessionId}: answer ${JSON.stringify(answer.content)} does not echo ${JSON.stringify(user.content)}`);
  }
  if (turns.length !== expectedTexts.length * 2) problems.push(`${sessionId}: ${turns.length} user/answer rows for ${expectedTexts.length} messages`);
  return problems;
}
