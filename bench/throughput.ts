// Throughput: N sessions x M messages through POST /v1/chat/completions (echo model, one
// `switchboard serve` process, WORKER_CONCURRENCY 32) against raw BullMQ add -> process ->
// complete with an empty processor at the same concurrency, same Redis, same run.
import { randomUUID } from "node:crypto";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import { TURN_QUEUE, turnJobId, type TurnJobData } from "../src/gateway/queues.js";
import { redisOptionsFromUrl } from "../src/bus/redis-url.js";
import type { BullmqWorkerCommand, BullmqWorkerMessage } from "./children/bullmq-worker.js";
import type { DurableFloorMessage } from "./children/durable-floor.js";
import { spawnChild } from "./lib/child.js";
import { BENCH_API_KEY, gatewayEnv, startGatewayProcess } from "./lib/gateway-process.js";
import { postgresEnv } from "./lib/postgres.js";
import { httpRequest, keepAliveAgent } from "./lib/http.js";
import { readCpuMs } from "./lib/proc.js";
import { Progress } from "./lib/progress.js";
import type { BenchContext, BenchResult } from "./lib/result.js";
import { msBetween, round, summarize } from "./lib/stats.js";
import { benchPrefix } from "./lib/redis.js";

export const CONCURRENCY = 32;

export interface Shape {
  sessions: number;
  messages: number;
}

export function shapeFor(ctx: BenchContext): Shape {
  return ctx.quick ? { sessions: 50, messages: 10 } : { sessions: 200, messages: 20 };
}

/** Run `count` producer loops at once, each doing `perLoop` steps in order. */
async function loops(count: number, perLoop: number, step: (loop: number, index: number) => Promise<void>): Promise<void> {
  await Promise.all(
    Array.from({ length: count }, async (_, loop) => {
      for (let i = 0; i < perLoop; i++) await step(loop, i);
    }),
  );
}

/** Raw BullMQ: jobs/s from the first add to the last completion (the worker is a separate process). */
export async function measureBullmq(ctx: BenchContext, shape: Shape): Promise<{ jobsPerSecond: number; jobs: number }> {
  const prefix = benchPrefix("raw");
  const connection = new Redis({ ...redisOptionsFromUrl(ctx.redisUrl), maxRetriesPerRequest: null });
  // The gateway's turn queue: same name, job ids and default job options.
  const turns = new Queue<TurnJobData>(TURN_QUEUE, {
    connection,
    prefix,
    defaultJobOptions: { removeOnComplete: true, removeOnFail: 1000, attempts: 20, backoff: { type: "exponential", delay: 1000 } },
  });
  const worker = spawnChild<BullmqWorkerCommand, BullmqWorkerMessage>("bullmq-worker.ts", [ctx.redisUrl, prefix, String(CONCURRENCY)]);
  const isDone = (m: BullmqWorkerMessage): m is Extract<BullmqWorkerMessage, { type: "done" }> => m.type === "done";
  try {
    await turns.waitUntilReady();
    await worker.next((m): m is Extract<BullmqWorkerMessage, { type: "ready" }> => m.type === "ready", 60_000);
    let nextId = 1;
    const add = async (): Promise<void> => {
      const inboxId = nextId++;
      await turns.add("turn", { conversationId: `raw-${inboxId % shape.sessions}`, inboxId }, { jobId: turnJobId(inboxId) });
    };
    // Warm-up (not counted): connections, scripts loaded, JIT.
    const warmup = 200;
    worker.send({ type: "expect", total: warmup });
    const warmDone = worker.next(isDone);
    await loops(20, warmup / 20, add);
    await warmDone;

    const jobs = shape.sessions * shape.messages;
    const progress = new Progress("raw BullMQ", jobs, ctx.progress);
    const offProgress = worker.on((m) => {
      if (m.type === "progress") progress.set(m.completed - warmup);
    });
    worker.send({ type: "expect", total: warmup + jobs });
    const done = worker.next(isDone, 300_000);
    const started = process.hrtime.bigint();
    await loops(shape.sessions, shape.messages, add);
    const finished = await done;
    offProgress();
    progress.finish();
    const seconds = msBetween(started, BigInt(finished.lastCompletedNs)) / 1000;
    return { jobsPerSecond: jobs / seconds, jobs };
  } finally {
    await worker.stop();
    await turns.close();
    connection.disconnect();
  }
}

export interface ChatLoad {
  messagesPerSecond: number;
  latenciesMs: number[];
  errors: string[];
  /** The serving process's CPU (every thread) per counted message, in ms; NaN without its pid. */
  cpuMsPerMessage: number;
}

/**
 * Closed-loop chat load on an OpenAI-style endpoint: every session sends its next message when
 * the answer to the previous one arrived, all sessions at once. A warm-up round of the same shape
 * comes first, uncounted.
 */
export async function driveChatLoad(ctx: BenchContext, url: string, shape: Shape, label: string, serverPid?: number): Promise<ChatLoad> {
  // Idle pooled connections close after 2 s, before the server's 5 s keep-alive timeout can close
  // one under a request (on a busy machine the warm-up's connections sit idle that long).
  const agent = keepAliveAgent(shape.sessions, 2_000);
  const run = randomUUID().slice(0, 8);
  const errors: string[] = [];
  const latenciesMs: number[] = [];
  const ask = async (session: string, text: string): Promise<number> => {
    const started = performance.now();
    const res = await httpRequest(`${url}/v1/chat/completions`, {
      method: "POST",
      agent,
      headers: { "content-type": "application/json", authorization: `Bearer ${BENCH_API_KEY}`, "x-session-id": session },
      body: JSON.stringify({ model: "echo", messages: [{ role: "user", content: text }] }),
    }).catch((err: Error) => ({ status: 0, body: `request failed: ${err.message}` }));
    const elapsed = performance.now() - started;
    if (res.status !== 200 || !res.body.includes(text)) {
      if (errors.length < 10) errors.push(`${res.status} ${res.body.slice(0, 200)}`);
      else errors.push("");
    }
    return elapsed;
  };
  try {
    // Warm-up, uncounted: one keep-alive connection per session first, as a client's pool would
    // hold (otherwise the first messages also measure connection set-up), then a whole round of
    // the same load on other sessions, so the round counted runs the code V8 has optimized rather
    // than paying for its optimizing compiler.
    const warm = (loop: number, i: number): Promise<void> => ask(`bench-warm-${run}-${loop}`, `warm ${loop} ${i}`).then(() => undefined);
    await loops(shape.sessions, 1, warm);
    await loops(shape.sessions, shape.messages, (loop, i) => warm(loop, i + 1));
    const total = shape.sessions * shape.messages;
    const progress = new Progress(label, total, ctx.progress);
    const cpuBefore = serverPid === undefined ? Number.NaN : readCpuMs(serverPid);
    const started = process.hrtime.bigint();
    await loops(shape.sessions, shape.messages, async (session, i) => {
      latenciesMs.push(await ask(`bench-${run}-${session}`, `session ${session} message ${i}`));
      progress.tick();
    });
    const seconds = msBetween(started, process.hrtime.bigint()) / 1000;
    const cpuMsPerMessage = serverPid === undefined ? Number.NaN : (readCpuMs(serverPid) - cpuBefore) / total;
    progress.finish();
    return { messagesPerSecond: total / seconds, latenciesMs, errors, cpuMsPerMessage };
  } finally {
    agent.destroy();
  }
}

/**
 * The gateway: messages/s over HTTP, each session's messages sent one after another (a chat).
 * `storeEnv` points it at a PostgreSQL schema; without it, SQLite in a folder of its own.
 */
export async function measureGateway(ctx: BenchContext, shape: Shape, storeEnv: Record<string, string> = {}, label = "gateway API"): Promise<ChatLoad> {
  const dir = join(ctx.workDir, `throughput-${randomUUID().slice(0, 8)}`);
  mkdirSync(dir, { recursive: true });
  const gateway = await startGatewayProcess(
    ["serve"],
    gatewayEnv(dir, ctx.redisUrl, benchPrefix("gw"), { WORKER_CONCURRENCY: String(CONCURRENCY), ...storeEnv }),
  );
  try {
    return await driveChatLoad(ctx, gateway.url as string, shape, label, gateway.pid);
  } finally {
    await gateway.stop();
  }
}

/** The durable floor (children/durable-floor.ts): the same load on the least a durable gateway does. */
export async function measureDurableFloor(ctx: BenchContext, shape: Shape): Promise<ChatLoad> {
  const dir = join(ctx.workDir, `floor-${randomUUID().slice(0, 8)}`);
  mkdirSync(dir, { recursive: true });
  const floor = spawnChild<never, DurableFloorMessage>("durable-floor.ts", [
    ctx.redisUrl, benchPrefix("floor"), String(CONCURRENCY), join(dir, "floor.db"),
  ]);
  try {
    const ready = await floor.next((m): m is Extract<DurableFloorMessage, { type: "ready" }> => m.type === "ready", 60_000);
    return await driveChatLoad(ctx, ready.url, shape, "durable floor", floor.pid);
  } finally {
    await floor.stop();
  }
}

/** Two runs of the durable floor as one: mean rate and CPU per message, every failure kept. */
function meanOfFloors(a: ChatLoad, b: ChatLoad): ChatLoad {
  return {
    messagesPerSecond: (a.messagesPerSecond + b.messagesPerSecond) / 2,
    latenciesMs: [...a.latenciesMs, ...b.latenciesMs],
    errors: [...a.errors, ...b.errors],
    cpuMsPerMessage: (a.cpuMsPerMessage + b.cpuMsPerMessage) / 2,
  };
}

export async function throughputBenchmark(ctx: BenchContext): Promise<BenchResult> {
  const shape = shapeFor(ctx);
  // The baselines are measured before and after the gateway: on a shared machine they drift, and
  // the spread shows by how much. The ratios use their means. The durable floor moves most from
  // one measurement to the next: its own CPU per message is so small that its rate is largely the
  // load generator's and Redis's.
  const before = await measureBullmq(ctx, shape);
  const floorBefore = await measureDurableFloor(ctx, shape);
  const gateway = await measureGateway(ctx, shape);
  const floorAfter = await measureDurableFloor(ctx, shape);
  const floor = meanOfFloors(floorBefore, floorAfter);
  // The same gateway on PostgreSQL (a schema of its own); the SQLite figures stand if it fails.
  let pg: ChatLoad | null = null;
  let pgError: string | null = null;
  try {
    pg = await measureGateway(ctx, shape, postgresEnv(await ctx.postgres(), "throughput"), "gateway API (PostgreSQL)");
  } catch (err) {
    pgError = (err as Error).message;
  }
  const after = await measureBullmq(ctx, shape);
  const raw = { jobsPerSecond: (before.jobsPerSecond + after.jobsPerSecond) / 2 };
  const ratio = gateway.messagesPerSecond / raw.jobsPerSecond;
  const floorRatio = floor.messagesPerSecond / raw.jobsPerSecond;
  const latency = summarize(gateway.latenciesMs);
  const notes = [
    `${shape.sessions} sessions x ${shape.messages} messages; each session sends its next message when the reply to the previous one arrives; every system first takes an uncounted round of the same shape on other sessions.`,
    `gateway: one \`switchboard serve\` process, echo model, WORKER_CONCURRENCY ${CONCURRENCY}, non-streaming POST /v1/chat/completions with X-Session-Id.`,
    `baseline: the same queue (name, prefix, job options, job ids) with an empty processor in a separate process, ${shape.sessions} producers adding ${shape.messages} jobs each; ` +
      `${before.jobsPerSecond.toFixed(0)} jobs/s before the gateway run, ${after.jobsPerSecond.toFixed(0)} after (the figure is their mean).`,
    "durable floor: the same HTTP load on the least a durable gateway does per message, in one process: node:http, an inbox row in SQLite before the job, " +
      `the same queue with an in-process worker (concurrency ${CONCURRENCY}) that marks the row answered, then the answer (bench/children/durable-floor.ts). ` +
      "Its ratio to raw BullMQ bounds what any gateway that records a message before queueing it and answers over HTTP can reach on this machine. " +
      `${floorBefore.messagesPerSecond.toFixed(0)} msg/s before the gateway run, ${floorAfter.messagesPerSecond.toFixed(0)} after (the figure is their mean; CPU per message likewise).`,
  ];
  if (floor.errors.length) notes.push(`${floor.errors.length} durable-floor request(s) failed, e.g. ${floor.errors.find(Boolean) ?? ""}`);
  if (gateway.errors.length) notes.push(`${gateway.errors.length} request(s) failed, e.g. ${gateway.errors.find(Boolean) ?? ""}`);
  notes.push("PostgreSQL: the same gateway and load with DATABASE_URL set (a schema of its own), measured between the second durable floor and the second baseline.");
  if (pgError) notes.push(`PostgreSQL: did not complete: ${pgError}`);
  if (pg?.errors.length) notes.push(`PostgreSQL: ${pg.errors.length} request(s) failed, e.g. ${pg.errors.find(Boolean) ?? ""}`);
  const pgLatency = pg ? summarize(pg.latenciesMs) : null;
  return {
    name: "throughput",
    title: "Throughput: API turns (SQLite, PostgreSQL) vs raw BullMQ",
    figures: [
      { key: "gateway_msgs_per_s", label: "gateway messages/s", value: round(gateway.messagesPerSecond, 1), unit: "msg/s" },
      { key: "bullmq_jobs_per_s", label: "raw BullMQ jobs/s (mean of 2)", value: round(raw.jobsPerSecond, 1), unit: "jobs/s" },
      { key: "throughput_ratio", label: "ratio gateway / BullMQ", value: round(ratio, 3), unit: "", target: { op: ">=", value: 0.5 } },
      { key: "durable_floor_msgs_per_s", label: "durable floor messages/s (mean of 2)", value: round(floor.messagesPerSecond, 1), unit: "msg/s" },
      { key: "durable_floor_before_msgs_per_s", label: "durable floor messages/s, before the gateway", value: round(floorBefore.messagesPerSecond, 1), unit: "msg/s" },
      { key: "durable_floor_after_msgs_per_s", label: "durable floor messages/s, after the gateway", value: round(floorAfter.messagesPerSecond, 1), unit: "msg/s" },
      { key: "durable_floor_ratio", label: "ratio durable floor / BullMQ", value: round(floorRatio, 3), unit: "" },
      { key: "gateway_floor_ratio", label: "ratio gateway / durable floor", value: round(gateway.messagesPerSecond / floor.messagesPerSecond, 3), unit: "", target: { op: ">=", value: 0.5 } },
      { key: "gateway_cpu_ms_per_msg", label: "gateway process CPU per message", value: round(gateway.cpuMsPerMessage, 3), unit: "ms" },
      { key: "durable_floor_cpu_ms_per_msg", label: "durable floor process CPU per message", value: round(floor.cpuMsPerMessage, 3), unit: "ms" },
      { key: "api_request_p50_ms", label: "API request p50 (under load)", value: round(latency.p50), unit: "ms" },
      { key: "api_request_p99_ms", label: "API request p99 (under load)", value: round(latency.p99), unit: "ms" },
      { key: "throughput_errors", label: "failed requests", value: gateway.errors.length, unit: "", target: { op: "<=", value: 0 } },
      { key: "pg_gateway_msgs_per_s", label: "PostgreSQL: gateway messages/s", value: pg ? round(pg.messagesPerSecond, 1) : NaN, unit: "msg/s" },
      { key: "pg_gateway_cpu_ms_per_msg", label: "PostgreSQL: gateway process CPU per message", value: pg ? round(pg.cpuMsPerMessage, 3) : NaN, unit: "ms" },
      { key: "pg_sqlite_gateway_ratio", label: "PostgreSQL: ratio to the gateway on SQLite", value: pg ? round(pg.messagesPerSecond / gateway.messagesPerSecond, 3) : NaN, unit: "", target: { op: ">=", value: 0.6 } },
      { key: "pg_api_request_p50_ms", label: "PostgreSQL: API request p50 (under load)", value: pgLatency ? round(pgLatency.p50) : NaN, unit: "ms" },
      { key: "pg_api_request_p99_ms", label: "PostgreSQL: API request p99 (under load)", value: pgLatency ? round(pgLatency.p99) : NaN, unit: "ms" },
      { key: "pg_api_p99_ratio", label: "PostgreSQL: API request p99 / SQLite's", value: pgLatency ? round(pgLatency.p99 / latency.p99, 3) : NaN, unit: "", target: { op: "<=", value: 2 } },
      { key: "pg_throughput_errors", label: "PostgreSQL: failed requests", value: pg ? pg.errors.length : NaN, unit: "", target: { op: "<=", value: 0 } },
    ],
    notes,
    series: [
      { name: `API request, ${shape.sessions} sessions at once`, samplesMs: gateway.latenciesMs },
      ...(pg ? [{ name: `API request on PostgreSQL, ${shape.sessions} sessions at once`, samplesMs: pg.latenciesMs }] : []),
    ],
  };
}
