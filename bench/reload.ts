// Reload: getMessagesAsConversation of a 10,000-message session, the read a turn does after it
// waited for the lease (repairAlternation + includeRowIds, as the agent asks); on SQLite, then on
// PostgreSQL.
import type { ConversationMessage, SessionStore } from "../src/state/types.js";
import type { LeaseReadMessage } from "./children/lease-read.js";
import { BACKEND_NAMES, openTarget, storeTarget, type Backend } from "./lib/backends.js";
import { spawnChild } from "./lib/child.js";
import { Progress } from "./lib/progress.js";
import type { BenchContext, BenchResult, Figure, LatencySeries } from "./lib/result.js";
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

async function fill(store: SessionStore, sessionId: string, count: number, progress: Progress | null): Promise<void> {
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

interface Reloads {
  runs: number;
  coldMs: number;
  samples: number[];
}

async function measureReloads(ctx: BenchContext, backend: Backend): Promise<Reloads> {
  const target = await storeTarget(ctx, backend, "reload");
  const writer = await openTarget(target);
  const options = { repairAlternation: true, includeRowIds: true };
  const progress = new Progress(`reload: writing transcript (${BACKEND_NAMES[backend]})`, MESSAGES, ctx.progress);
  try {
    // Other sessions interleaved in the same store, so the read must use the index.
    for (let i = 0; i < OTHER_SESSIONS; i++) await fill(writer, `other-${i}`, OTHER_MESSAGES, null);
    await fill(writer, "big", MESSAGES, progress);
    progress.finish();
    // The code the reads run is made warm on the writer's connection, as it is in a running
    // gateway: the first read below then measures a newly opened store (its file handle or pool,
    // its empty caches), not this process's first run of that code.
    for (let i = 0; i < 3; i++) await writer.getMessagesAsConversation("big", options);
  } finally {
    await writer.close();
  }

  const store = await openTarget(target);
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
    return { runs, coldMs, samples };
  } finally {
    await store.close();
  }
}

function reloadFigures(prefix: string, label: string, reloads: Reloads): Figure[] {
  const s = summarize(reloads.samples);
  return [
    { key: `${prefix}reload_ms`, label: `${label}reload p50 (${reloads.runs} reads)`, value: round(s.p50), unit: "ms", target: { op: "<=", value: 50 } },
    { key: `${prefix}reload_max_ms`, label: `${label}reload max`, value: round(s.max), unit: "ms", target: { op: "<=", value: 50 } },
    { key: `${prefix}reload_cold_ms`, label: `${label}first read after opening the store`, value: round(reloads.coldMs), unit: "ms", target: { op: "<=", value: 50 } },
  ];
}

/** The write lock a turn's lease transaction holds over the same 10,000-message session (bench/children/lease-read.ts). */
async function measureLeaseReads(ctx: BenchContext): Promise<{ firstTurnMs: number[]; laterTurnMs: number[] }> {
  const target = await storeTarget(ctx, "sqlite", "reload");
  const child = spawnChild<never, LeaseReadMessage>("lease-read.ts", [target.location, "big", String(ctx.quick ? 3 : 7)]);
  try {
    return await child.next((m): m is Extract<LeaseReadMessage, { type: "done" }> => m.type === "done");
  } finally {
    await child.stop();
  }
}

export async function reloadBenchmark(ctx: BenchContext): Promise<BenchResult> {
  const sqlite = await measureReloads(ctx, "sqlite");
  const figures = reloadFigures("", "", sqlite);
  const lease = await measureLeaseReads(ctx);
  const [first, later] = [summarize(lease.firstTurnMs), summarize(lease.laterTurnMs)];
  figures.push(
    { key: "lease_read_lock_first_p50_ms", label: "write lock held by a turn's lease transaction, first turn in a process, p50", value: round(first.p50), unit: "ms" },
    { key: "lease_read_lock_first_max_ms", label: "write lock held by a turn's lease transaction, first turn in a process, max", value: round(first.max), unit: "ms" },
    { key: "lease_read_lock_later_p50_ms", label: "write lock held by a turn's lease transaction, later turn, p50", value: round(later.p50), unit: "ms" },
    { key: "lease_read_lock_later_max_ms", label: "write lock held by a turn's lease transaction, later turn, max", value: round(later.max), unit: "ms" },
  );
  const series: LatencySeries[] = [{ name: "reload of 10,000 messages (SQLite)", samplesMs: [sqlite.coldMs, ...sqlite.samples], targetMs: 50 }];
  const notes = [
    `${MESSAGES} rows (user, tool call, tool result, answer; JSON metadata) among ${OTHER_SESSIONS * OTHER_MESSAGES} rows of other sessions; repairAlternation and includeRowIds on. ` +
      "The same data in a fresh SQLite file, then in a fresh PostgreSQL schema (the first read on a newly opened store: a new file handle, or a new connection pool; the reading code already ran on the writer's connection, as it has in a running gateway).",
    "On SQLite a connection remembers the transcript rows it has read (messages are append-only): the first read reads all 10,000 rows, a later one only the rows added since, " +
      "as a turn's reload does in a running gateway. On PostgreSQL, where a lower id can commit after a higher one, the same read also counts the rows up to the last one held and reads them all again when a row is missing.",
    `Lease transaction (SQLite, the same session, ${lease.firstTurnMs.length} rounds in a separate process): BEGIN IMMEDIATE ... COMMIT of a turn's lease with its first reads, on a newly opened store and again on the same store; ` +
      "a transcript the store does not hold is read before it, outside the write lock, and the rows become messages after the commit.",
  ];
  try {
    const pg = await measureReloads(ctx, "pg");
    figures.push(...reloadFigures("pg_", "PostgreSQL: ", pg));
    series.push({ name: "reload of 10,000 messages (PostgreSQL)", samplesMs: [pg.coldMs, ...pg.samples], targetMs: 50 });
  } catch (err) {
    figures.push(...reloadFigures("pg_", "PostgreSQL: ", { runs: 0, coldMs: NaN, samples: [NaN] }));
    notes.push(`PostgreSQL: did not complete: ${(err as Error).message}`);
  }
  return {
    name: "reload",
    title: `Reload: getMessagesAsConversation of a ${MESSAGES.toLocaleString("en")}-message session (SQLite, PostgreSQL)`,
    figures,
    notes,
    series,
  };
}
