// Reload: getMessagesAsConversation of a 10,000-message session, the read a turn does after it
// waited for the lease (repairAlternation + includeRowIds, as the agent asks).
import { join } from "node:path";
import type { ConversationMessage } from "../src/state/types.js";
import { SessionDB } from "../src/state/index.js";
import { Progress } from "./lib/progress.js";
import type { BenchContext, BenchResult } from "./lib/result.js";
import { round, summarize } from "./lib/stats.js";

const MESSAGES = 10_000;
const OTHER_SESSIONS = 9;
const OTHER_MESSAGES = 1_000;
const BATCH = 500;

const sentence = (n: number): string =>
  `Message ${n}: the quarterly numbers for region ${n % 17} look steady; please compare them with last year's report and flag anything unusual.`;

/** One exchange of four rows: a user message, a tool call, its result, and the answer. */
function exchange(n: number, timestamp: number): ConversationMessage[] {
  const callId = `call_${n}`;
  return [
    {
      role: "user",
      content: sentence(n),
      timestamp,
      platform_message_id: `1700000000.${String(n).padStart(6, "0")}`,
      display_kind: "slack",
      display_metadata: { user_id: "U0123456", channel: "C0123456", thread_ts: "1700000000.000001" },
    },
    {
      role: "assistant",
      content: null,
      tool_calls: [{ id: callId, type: "function", function: { name: "lookup_report", arguments: JSON.stringify({ region: n % 17, year: 2024 }) } }],
      timestamp,
    },
    { role: "tool", content: JSON.stringify({ region: n % 17, revenue: 1000 + n, growth: 0.03 }), tool_call_id: callId, tool_name: "lookup_report", timestamp },
    { role: "assistant", content: `${sentence(n)} Nothing unusual stands out.`, timestamp, finish_reason: "stop" },
  ];
}

async function fill(store: SessionDB, sessionId: string, count: number, progress: Progress | null): Promise<void> {
  await store.createSession(sessionId, { source: "bench" });
  let pending: ConversationMessage[] = [];
  for (let n = 0; n * 4 < count; n++) {
    pending.push(...exchange(n, 1_700_000_000 + n));
    if (pending.length >= BATCH) {
      await store.appendMessagesBatch(sessionId, pending);
      progress?.tick(pending.length);
      pending = [];
    }
  }
  if (pending.length) {
    await store.appendMessagesBatch(sessionId, pending);
    progress?.tick(pending.length);
  }
}

export async function reloadBenchmark(ctx: BenchContext): Promise<BenchResult> {
  const path = join(ctx.workDir, "reload.db");
  const writer = new SessionDB(path);
  const progress = new Progress("reload: writing transcript", MESSAGES, ctx.progress);
  // Other sessions interleaved in the same file, so the read must use the index.
  for (let i = 0; i < OTHER_SESSIONS; i++) await fill(writer, `other-${i}`, OTHER_MESSAGES, null);
  await fill(writer, "big", MESSAGES, progress);
  progress.finish();
  await writer.close();

  const store = new SessionDB(path);
  const options = { repairAlternation: true, includeRowIds: true };
  try {
    const coldStart = performance.now();
    const first = await store.getMessagesAsConversation("big", options);
    const coldMs = performance.now() - coldStart;
    if (first.length !== MESSAGES) throw new Error(`expected ${MESSAGES} messages, read ${first.length}`);
    const runs = ctx.quick ? 10 : 30;
    const samples: number[] = [];
    for (let i = 0; i < runs; i++) {
      const started = performance.now();
      await store.getMessagesAsConversation("big", options);
      samples.push(performance.now() - started);
    }
    const s = summarize(samples);
    return {
      name: "reload",
      title: `Reload: getMessagesAsConversation of a ${MESSAGES.toLocaleString("en")}-message session`,
      figures: [
        { key: "reload_ms", label: `reload p50 (${runs} reads)`, value: round(s.p50), unit: "ms", target: { op: "<=", value: 50 } },
        { key: "reload_max_ms", label: "reload max", value: round(s.max), unit: "ms", target: { op: "<=", value: 50 } },
        { key: "reload_cold_ms", label: "first read after opening the file", value: round(coldMs), unit: "ms", target: { op: "<=", value: 50 } },
      ],
      notes: [
        `${MESSAGES} rows (user, tool call, tool result, answer; JSON metadata) among ${OTHER_SESSIONS * OTHER_MESSAGES} rows of other sessions; repairAlternation and includeRowIds on.`,
      ],
      series: [{ name: "reload of 10,000 messages", samplesMs: [coldMs, ...samples], targetMs: 50 }],
    };
  } finally {
    await store.close();
  }
}
