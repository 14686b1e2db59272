// Conversations over POST /v1/chat/completions (non-streamed, X-Session-Id per conversation), all
// at once, each sending its next message once the reply to the previous one arrived. A reply
// counts when it is the fake model's full answer to that message.
import { randomUUID } from "node:crypto";
import { fakeReply } from "./fake-llm-reply.js";
import { BENCH_API_KEY } from "./gateway-process.js";
import { httpRequest, keepAliveAgent } from "./http.js";
import type { Progress } from "./progress.js";

export interface ConversationRun {
  turns: number;
  /** First send to the last reply. */
  seconds: number;
  /** Send to reply, per message answered. */
  replyMs: number[];
  /** The first few failures (status and body), and how many there were. */
  errors: string[];
  failed: number;
}

export async function runConversations(url: string, conversations: number, messages: number, progress: Progress | null = null): Promise<ConversationRun> {
  const agent = keepAliveAgent(conversations, 2_000);
  const tag = randomUUID().slice(0, 8);
  const replyMs: number[] = [];
  const errors: string[] = [];
  let failed = 0;
  const ask = async (session: string, text: string): Promise<void> => {
    const started = performance.now();
    const res = await httpRequest(`${url}/v1/chat/completions`, {
      method: "POST",
      agent,
      headers: { "content-type": "application/json", authorization: `Bearer ${BENCH_API_KEY}`, "x-session-id": session },
      body: JSON.stringify({ model: "fake-model", messages: [{ role: "user", content: text }] }),
    }).catch((err: Error) => ({ status: 0, body: `request failed: ${err.message}` }));
    progress?.tick();
    if (res.status === 200 && res.body.includes(JSON.stringify(fakeReply(text)).slice(1, -1))) {
      replyMs.push(performance.now() - started);
      return;
    }
    failed += 1;
    if (errors.length < 3) errors.push(`${res.status} ${res.body.slice(0, 200)}`);
  };
  const started = performance.now();
  try {
    await Promise.all(
      Array.from({ length: conversations }, async (_, c) => {
        const session = `llm-${tag}-${c}`;
        for (let m = 0; m < messages; m++) await ask(session, `conversation ${tag} ${c} message ${m}`);
      }),
    );
  } finally {
    agent.destroy();
  }
  return { turns: conversations * messages, seconds: (performance.now() - started) / 1000, replyMs, errors, failed };
}
