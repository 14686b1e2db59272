// Ingress latency: the HTTP ack of a signed webhook delivery (POST /webhooks/:route, a callback
// route: verify signature, record in the inbox, enqueue, answer 202) at a steady rate, open loop
// (requests leave on schedule whatever the answers do). The turns run meanwhile and their replies
// go to a local callback endpoint (a process of its own, bench/children/callback-sink.ts), so the
// ack is measured under the load it causes. Also: the ack at 60% of the gateway's measured
// maximum rate (the throughput benchmark's messages/s in this run, or measured here when that
// benchmark did not run), one process, and the same load against a bare node:http server, the
// machine's floor. The load comes from a process of its own (bench/children/webhook-load.ts).
import { randomUUID } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { PlainHttpServerOut } from "./children/plain-http-server.js";
import type { WebhookLoadIn, WebhookLoadOut, WebhookLoadPlan, WebhookLoadResult } from "./children/webhook-load.js";
import { spawnChild } from "./lib/child.js";
import { gatewayEnv, startGatewayProcess, type GatewayProcess } from "./lib/gateway-process.js";
import { busyPercent, readCoreWaitMs, readCpuMs, readMachineCpu } from "./lib/proc.js";
import { Progress } from "./lib/progress.js";
import type { BenchContext, BenchResult } from "./lib/result.js";
import { startCallbackSinkProcess, type CallbackSinkProcess } from "./lib/sink.js";
import { overTenMs, readServerTimes, workersLoopBusyPercent, type OverTen } from "./lib/server-times.js";
import { round, summarize } from "./lib/stats.js";
import { benchPrefix } from "./lib/redis.js";
import { measureGateway, shapeFor } from "./throughput.js";

const RATE_PER_S = 500;
const CHATS = 50;
const SECRET = "bench-webhook-secret";
const ROUTE = "/webhooks/bench";

export interface Run {
  acksMs: number[];
  statuses: Map<number, number>;
  /** How far behind schedule the generator sent, p99 (shows the client kept up). */
  sendLagP99Ms: number;
  /** The generator's own event-loop delay, p99: a stall there would add to the acks it times. */
  generatorLoopDelayP99Ms: number;
  /** Seconds after the last ack until every reply reached the callback endpoint, or null. */
  drainedAfterS: number | null;
  sent: number;
  /**
   * The gateway's own timing over 10 ms during the measured load (whole answers, and their durable
   * step), and how busy its workers thread's loop was (100: the turns ran flat out, behind the load).
   */
  server: { answers: OverTen; accepts: OverTen; walRewinds: number; workersLoopBusyPct: number } | null;
  /** Replies that reached the callback endpoint per second while the load ran (what the turns kept up with), or null. */
  repliesPerS: number | null;
  /** The share of the machine's cores busy while the load ran (every process: gateway, Redis, generator, callback endpoint). */
  machineBusyPct: number;
  /** The gateway process's CPU (every thread of it) per message sent while the load ran. */
  gatewayCpuMsPerMsg: number;
  /**
   * The share of the load's time that the two ends of an ack spent runnable but waiting for a
   * core (/proc schedstat): the gateway's main thread (the HTTP ingress) and the generator's.
   */
  coreWaitPct: { httpThread: number; generator: number };
}

/**
 * The load generator's process (bench/children/webhook-load.ts), one per measured server: its
 * warm-up and the load it precedes run in the same process, on the same connections.
 */
class LoadGenerator {
  private constructor(private readonly child: ReturnType<typeof spawnChild<WebhookLoadIn, WebhookLoadOut>>) {}

  get pid(): number {
    return this.child.pid;
  }

  static async start(): Promise<LoadGenerator> {
    const child = spawnChild<WebhookLoadIn, WebhookLoadOut>("webhook-load.ts");
    try {
      await child.next((m): m is Extract<WebhookLoadOut, { type: "ready" }> => m.type === "ready", 30_000);
    } catch (err) {
      await child.stop();
      throw err;
    }
    return new LoadGenerator(child);
  }

  async run(plan: Omit<WebhookLoadPlan, "run">): Promise<WebhookLoadResult> {
    this.child.send({ type: "load", plan: { ...plan, run: randomUUID().slice(0, 8) } });
    const done = await this.child.next((m): m is Extract<WebhookLoadOut, { type: "done" }> => m.type === "done", plan.seconds * 1000 + 200_000);
    return done.result;
  }

  stop(): Promise<void> {
    return this.child.stop();
  }
}

async function load(ctx: BenchContext, generator: LoadGenerator, gateway: GatewayProcess, sink: CallbackSinkProcess | null, seconds: number, label: string, ratePerS: number, drain = true): Promise<Run> {
  const total = Math.round(ratePerS * seconds);
  const progress = new Progress(label, total, ctx.progress);
  const repliesBefore = (await sink?.received()) ?? 0;
  const coreWaits = (): [number, number] => [readCoreWaitMs(gateway.pid), readCoreWaitMs(generator.pid)];
  const [machineBefore, cpuBefore, waitsBefore, startedAt] = [readMachineCpu(), readCpuMs(gateway.pid), coreWaits(), performance.now()];
  const result = await generator.run({ url: `${gateway.url}${ROUTE}`, secret: SECRET, ratePerS, seconds, chats: CHATS });
  const [machineAfter, cpuAfter, waitsAfter, tookMs] = [readMachineCpu(), readCpuMs(gateway.pid), coreWaits(), performance.now() - startedAt];
  const repliesDuring = sink ? (await sink.received()) - repliesBefore : null;
  progress.finish();
  const statuses = new Map(result.statuses);
  const drainStart = performance.now();
  const accepted = statuses.get(202) ?? 0;
  const drainLimitMs = ctx.quick ? 20_000 : 60_000;
  let drainedAfterS: number | null = null;
  while (drain && sink && performance.now() - drainStart < drainLimitMs) {
    if ((await sink.received()) - repliesBefore >= accepted) {
      drainedAfterS = (performance.now() - drainStart) / 1000;
      break;
    }
    await sleep(100);
  }
  return {
    acksMs: result.acksMs,
    statuses,
    sendLagP99Ms: summarize(result.sendLagsMs).p99,
    generatorLoopDelayP99Ms: result.loopDelayP99Ms,
    drainedAfterS,
    sent: total,
    server: null,
    repliesPerS: repliesDuring === null ? null : repliesDuring / seconds,
    machineBusyPct: busyPercent(machineBefore, machineAfter),
    gatewayCpuMsPerMsg: (cpuAfter - cpuBefore) / total,
    coreWaitPct: { httpThread: (100 * (waitsAfter[0] - waitsBefore[0])) / tookMs, generator: (100 * (waitsAfter[1] - waitsBefore[1])) / tookMs },
  };
}

function configFile(dir: string, callbackUrl: string): string {
  const path = join(dir, "switchboard.yaml");
  writeFileSync(path, `webhooks:\n  bench:\n    secret: ${SECRET}\n    style: github\n    reply: callback\n    callback_url: ${callbackUrl}\n`);
  return path;
}

/** The uncounted load at the measured rate before each measured one. */
function warmUpSeconds(ctx: BenchContext): number {
  return ctx.quick ? 2 : 5;
}

/** Where the turns run while the acks are measured. */
export type Topology = "one-process" | "split" | "no-workers";

const SERVE_ARGS: Record<Topology, string[]> = {
  "one-process": ["serve"],
  split: ["serve", "--no-workers"],
  "no-workers": ["serve", "--no-workers"],
};

/** What another benchmark changes in a measurement (bench/mechanisms.ts): the gateway's environment, a shorter warm-up, no wait for the last replies. */
export interface MeasureOptions {
  env?: Record<string, string>;
  warmUpSeconds?: number;
  waitForReplies?: boolean;
}

export async function measure(ctx: BenchContext, topology: Topology, seconds: number, ratePerS = RATE_PER_S, options: MeasureOptions = {}): Promise<Run> {
  const dir = join(ctx.workDir, `ingress-${topology}-${Math.round(ratePerS)}-${randomUUID().slice(0, 8)}`);
  mkdirSync(dir, { recursive: true });
  const sink = await startCallbackSinkProcess();
  const env = gatewayEnv(dir, ctx.redisUrl, benchPrefix("ingress"), { SWITCHBOARD_CONFIG: configFile(dir, sink.url), ...options.env });
  const processes: GatewayProcess[] = [];
  // Without workers no reply ever comes: do not wait for them.
  const replies = topology === "no-workers" ? null : sink;
  const generator = await LoadGenerator.start();
  try {
    const serve = await startGatewayProcess(SERVE_ARGS[topology], env);
    processes.push(serve);
    if (topology === "split") processes.push(await startGatewayProcess(["worker"], env));
    // Warm-up, uncounted, at the measured rate: long enough that V8 has optimized the ingress
    // path, so its compiler does not run during the counted load (bench/README.md, "Ingress").
    await load({ ...ctx, progress: false }, generator, serve, replies, options.warmUpSeconds ?? warmUpSeconds(ctx), "warm-up", ratePerS, options.waitForReplies);
    const url = serve.url as string;
    const read = (): ReturnType<typeof readServerTimes> => readServerTimes(url, ROUTE, "webhook");
    const before = await read();
    const run = await load(ctx, generator, serve, replies, seconds, `ingress (${topology}, ${Math.round(ratePerS)}/s)`, ratePerS, options.waitForReplies);
    const after = await read();
    const server = {
      answers: overTenMs(before.answer, after.answer),
      accepts: overTenMs(before.accept, after.accept),
      walRewinds: after.walRewinds - before.walRewinds,
      workersLoopBusyPct: workersLoopBusyPercent(before, after),
    };
    return { ...run, server };
  } finally {
    await generator.stop();
    await Promise.all(processes.map((p) => p.stop()));
    await sink.close();
  }
}

/** The same load against a bare node:http server that answers 202 (bench/children/plain-http-server.ts): the machine's floor. */
async function measurePlainHttp(seconds: number, ratePerS: number): Promise<number[]> {
  const server = spawnChild<never, PlainHttpServerOut>("plain-http-server.ts");
  const generator = await LoadGenerator.start();
  try {
    const { url } = await server.next((m): m is Extract<PlainHttpServerOut, { type: "ready" }> => m.type === "ready", 30_000);
    const plan = { url: `${url}${ROUTE}`, secret: SECRET, ratePerS, seconds, chats: CHATS };
    await generator.run({ ...plan, seconds: 1 });
    return (await generator.run(plan)).acksMs;
  } finally {
    await generator.stop();
    await server.stop();
  }
}

function describeStatuses(statuses: Map<number, number>): string {
  return [...statuses.entries()].map(([status, n]) => `${status === -1 ? "network error" : status}: ${n}`).join(", ");
}

export async function ingressBenchmark(ctx: BenchContext): Promise<BenchResult> {
  const seconds = ctx.quick ? 3 : 10;
  const one = await measure(ctx, "one-process", seconds);
  const split = await measure(ctx, "split", seconds);
  const bare = await measure(ctx, "no-workers", seconds);
  // The gateway's maximum: this run's throughput figure when there is one.
  const measuredMax = ctx.measured.gateway_msgs_per_s;
  const maxRate = measuredMax ?? (await measureGateway(ctx, shapeFor(ctx))).messagesPerSecond;
  const rate60 = 0.6 * maxRate;
  const at60 = await measure(ctx, "one-process", seconds, rate60);
  const plainAcksMs = await measurePlainHttp(seconds, rate60);
  const plainAt60 = summarize(plainAcksMs);
  const [a, b, c, d] = [one, split, bare, at60].map((run) => summarize(run.acksMs));
  const failed = (run: Run): number => run.sent - (run.statuses.get(202) ?? 0);
  const slowAcks = (run: Run): number => run.acksMs.filter((ms) => ms > 10).length;
  const overTen = (run: Run): string =>
    `acks over 10 ms: ${slowAcks(run)} of ${run.acksMs.length} at the client` +
    (run.server ? `, ${run.server.answers.over} of ${run.server.answers.of} at the server, ${run.server.accepts.over} of ${run.server.accepts.of} in its durable step (record + wake-up)` : "");
  const drained = (run: Run): string => (run.drainedAfterS === null ? "not within the wait" : `${run.drainedAfterS.toFixed(1)} s after the last ack`);
  const describe = (run: Run): string => `statuses ${describeStatuses(run.statuses)}; generator lag p99 ${run.sendLagP99Ms.toFixed(2)} ms, its event-loop delay p99 ${run.generatorLoopDelayP99Ms.toFixed(2)} ms; waiting for a core: the HTTP thread ${run.coreWaitPct.httpThread.toFixed(1)}% of the load's time, the generator ${run.coreWaitPct.generator.toFixed(1)}%; ${overTen(run)}`;
  return {
    name: "ingress",
    title: `Ingress: webhook ack latency at a steady ${RATE_PER_S} messages/s`,
    figures: [
      { key: "ingress_p50_ms", label: "ack p50 (one process: ingress + workers)", value: round(a.p50), unit: "ms" },
      { key: "ingress_p99_ms", label: "ack p99 (one process: ingress + workers)", value: round(a.p99), unit: "ms", target: { op: "<=", value: 10 } },
      { key: "ingress_non_202", label: "acks other than 202 (all three layouts)", value: failed(one) + failed(split) + failed(bare), unit: "", target: { op: "<=", value: 0 } },
      { key: "ingress_60pct_rate", label: "60% of the gateway's maximum rate", value: round(rate60, 0), unit: "msg/s" },
      { key: "ingress_p50_at_60pct_ms", label: "ack p50 at 60% of the maximum rate (one process)", value: round(d.p50), unit: "ms" },
      { key: "ingress_p99_at_60pct_ms", label: "ack p99 at 60% of the maximum rate (one process)", value: round(d.p99), unit: "ms", target: { op: "<=", value: 10 } },
      { key: "ingress_plain_http_p99_at_60pct_ms", label: "ack p99 of a bare node:http server at the same rate (the machine's floor)", value: round(plainAt60.p99), unit: "ms" },
      { key: "ingress_acks_over_10ms_at_60pct", label: "acks over 10 ms at 60% (client, send to answer)", value: slowAcks(at60), unit: "" },
      { key: "ingress_server_acks_over_10ms_at_60pct", label: "acks over 10 ms at 60% (server, headers read to answer written)", value: at60.server?.answers.over ?? -1, unit: "" },
      { key: "ingress_accepts_over_10ms_at_60pct", label: "accepts over 10 ms at 60% (the server's durable step: record + wake-up)", value: at60.server?.accepts.over ?? -1, unit: "" },
      { key: "ingress_wal_rewinds_at_60pct", label: "rewinds of the SQLite log while the 60% load ran (each holds the write gate while it syncs)", value: at60.server?.walRewinds ?? -1, unit: "" },
      { key: "ingress_replies_per_s_at_60pct", label: "replies delivered per second while the 60% load ran (the turns' pace)", value: round(at60.repliesPerS ?? -1, 0), unit: "msg/s" },
      { key: "ingress_machine_busy_pct_at_60pct", label: "the machine's cores busy while the 60% load ran (every process)", value: round(at60.machineBusyPct, 0), unit: "%" },
      { key: "ingress_cpu_ms_per_msg_at_60pct", label: "gateway process CPU per message at 60% (every thread)", value: round(at60.gatewayCpuMsPerMsg), unit: "ms" },
      { key: "ingress_http_thread_core_wait_pct_at_60pct", label: "the HTTP thread's time waiting for a core while the 60% load ran (runnable, not running)", value: round(at60.coreWaitPct.httpThread, 1), unit: "%" },
      { key: "ingress_generator_core_wait_pct_at_60pct", label: "the load generator's time waiting for a core while the 60% load ran (it times the acks)", value: round(at60.coreWaitPct.generator, 1), unit: "%" },
      { key: "ingress_workers_loop_busy_pct_at_60pct", label: "the workers thread's event loop busy while the 60% load ran (100: the turns ran flat out, behind the load)", value: round(at60.server?.workersLoopBusyPct ?? Number.NaN, 0), unit: "%" },
      { key: "ingress_machine_busy_pct", label: `the machine's cores busy at ${RATE_PER_S} msg/s (one process; every process)`, value: round(one.machineBusyPct, 0), unit: "%" },
      { key: "ingress_http_thread_core_wait_pct", label: `the HTTP thread's time waiting for a core at ${RATE_PER_S} msg/s (one process)`, value: round(one.coreWaitPct.httpThread, 1), unit: "%" },
      { key: "ingress_workers_loop_busy_pct", label: `the workers thread's event loop busy at ${RATE_PER_S} msg/s (one process)`, value: round(one.server?.workersLoopBusyPct ?? Number.NaN, 0), unit: "%" },
      { key: "ingress_split_p50_ms", label: "ack p50 (serve --no-workers + a worker process)", value: round(b.p50), unit: "ms" },
      { key: "ingress_split_p99_ms", label: "ack p99 (serve --no-workers + a worker process)", value: round(b.p99), unit: "ms" },
      { key: "ingress_bare_p50_ms", label: "ack p50 (no turns running anywhere)", value: round(c.p50), unit: "ms" },
      { key: "ingress_bare_p99_ms", label: "ack p99 (no turns running anywhere)", value: round(c.p99), unit: "ms" },
    ],
    notes: [
      `Path: POST /webhooks/bench (github-style HMAC signature, reply: callback) -> verify -> inbox row -> wake-up (in memory to the workers thread; a BullMQ job in the split layout) -> 202; ${one.sent} deliveries over ${seconds} s to ${CHATS} chats, open loop, each load after an uncounted warm-up of ${warmUpSeconds(ctx)} s at its rate from the same generator process, on the same connections.`,
      `One process: ${describe(one)}; every reply delivered ${drained(one)}.`,
      `Split: ${describe(split)}; every reply delivered ${drained(split)}.`,
      `No turns (the ack path alone, messages stay queued): ${describe(bare)}.`,
      `At 60% of the maximum: ${Math.round(rate60)}/s, 60% of ${Math.round(maxRate)} messages/s ` +
        `(${measuredMax === undefined ? "measured here as the throughput benchmark does" : "the throughput benchmark's gateway messages/s in this run"}); ` +
        `${describe(at60)}; every reply delivered ${drained(at60)}; acks other than 202: ${failed(at60)}.`,
      `The machine's floor: the same generator at the same rate against a bare node:http server in a process of its own, answering 202 with nothing recorded: ack p50 ${plainAt60.p50.toFixed(2)} ms, p99 ${plainAt60.p99.toFixed(2)} ms.`,
    ],
    series: [
      { name: `ack at ${RATE_PER_S}/s, one process`, samplesMs: one.acksMs, targetMs: 10 },
      { name: `ack at ${RATE_PER_S}/s, ingress + worker process`, samplesMs: split.acksMs, targetMs: 10 },
      { name: `ack at ${RATE_PER_S}/s, no turns running`, samplesMs: bare.acksMs, targetMs: 10 },
      { name: `ack at ${Math.round(rate60)}/s (60% of max), one process`, samplesMs: at60.acksMs, targetMs: 10 },
      { name: `ack at ${Math.round(rate60)}/s, a bare node:http server (the floor)`, samplesMs: plainAcksMs, targetMs: 10 },
    ],
  };
}
