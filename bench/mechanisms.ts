// What each performance mechanism buys: its target figure measured with and without it, in the
// same run, alternating (with, without, with, without), each arm on a freshly started gateway.
// A mechanism is turned off by SWITCHBOARD_BENCH_WITHOUT (src/shared/bench-without.ts), the
// workers thread by WORKERS_LAYOUT=inline. The loads are the other benchmarks' (throughput,
// ingress, Slack, LLM in flight), smaller. A gain is with / without for a rate and without / with
// for a latency, CPU or command count: above 1 the mechanism helps.
import { mkdirSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { BENCH_WITHOUT_ENV, type Mechanism } from "../src/shared/bench-without.js";
import { measure as measureIngress } from "./ingress.js";
import { DEFAULT_PACE } from "./lib/fake-llm-reply.js";
import { startFakeLlm, type FakeLlm } from "./lib/fake-llm.js";
import { FakeSlackApi } from "./lib/fake-slack-api.js";
import { measureInflight } from "./lib/llm-inflight.js";
import { CommandStatsReader, totalCount } from "./lib/redis-commands.js";
import type { BenchContext, BenchResult, Figure } from "./lib/result.js";
import { closedLoop, SlackDriver, warmUp } from "./lib/slack-load.js";
import { ReplyTracker, summarizeReplies } from "./lib/slack-replies.js";
import { BENCH_BOT_TOKEN, startSwitchboard } from "./lib/slack-systems.js";
import { round, summarize } from "./lib/stats.js";
import { ownRedis } from "./slack.js";
import { measureGateway } from "./throughput.js";

const PROBE_ORDER = ["throughput", "ingress", "slack", "inflight"] as const;
type Probe = (typeof PROBE_ORDER)[number];

/** One figure of a probe: which way is better. */
interface FigureSpec {
  probe: Probe;
  figure: string;
  label: string;
  better: "higher" | "lower";
}

const FIGURES = {
  msgsPerS: { probe: "throughput", figure: "msgs_per_s", label: "API messages/s", better: "higher" },
  ackP99: { probe: "ingress", figure: "ack_p99", label: "webhook ack p99 at 60% load", better: "lower" },
  slackMsgsPerS: { probe: "slack", figure: "slack_msgs_per_s", label: "Slack messages/s", better: "higher" },
  redisPerMsg: { probe: "slack", figure: "redis_per_msg", label: "Redis commands per Slack message", better: "lower" },
  cpuPerTurn: { probe: "inflight", figure: "cpu_per_turn", label: "CPU per streamed turn", better: "lower" },
  replyP50: { probe: "inflight", figure: "reply_p50", label: "streamed reply p50", better: "lower" },
  redisPerTurn: { probe: "inflight", figure: "redis_per_turn", label: "Redis commands per streamed turn", better: "lower" },
} satisfies Record<string, FigureSpec>;

interface MechanismSpec {
  /** The key's name: mechanism_<key>_gain. */
  key: string;
  /** The environment of the arm without it. */
  without: Record<string, string>;
  /** The first is the target figure (the `_gain` key); the others get `_<figure>_gain`. */
  figures: FigureSpec[];
}

const off = (name: Mechanism): Record<string, string> => ({ [BENCH_WITHOUT_ENV]: name });

const MECHANISMS: readonly MechanismSpec[] = [
  // First: its arms with the thread give the maximum rate the ingress loads take 60% of.
  { key: "workers_thread", without: { WORKERS_LAYOUT: "inline" }, figures: [FIGURES.ackP99, FIGURES.msgsPerS] },
  { key: "write_gate", without: off("write-gate"), figures: [FIGURES.msgsPerS, FIGURES.ackP99] },
  { key: "group_commit", without: off("group-commit"), figures: [FIGURES.msgsPerS, FIGURES.ackP99] },
  { key: "local_hand_off", without: off("local-hand-off"), figures: [FIGURES.msgsPerS, FIGURES.redisPerMsg, FIGURES.slackMsgsPerS] },
  { key: "wal_checkpointer", without: off("wal-checkpointer"), figures: [FIGURES.ackP99, FIGURES.msgsPerS] },
  { key: "delta_coalescing", without: off("delta-coalescing"), figures: [FIGURES.cpuPerTurn, FIGURES.redisPerTurn] },
  { key: "buffered_fetch", without: off("buffered-fetch"), figures: [FIGURES.cpuPerTurn, FIGURES.replyP50] },
];

/** Every arm starts from the defaults, whatever the runner's environment says. */
const WITH_ALL: Record<string, string> = { [BENCH_WITHOUT_ENV]: "", WORKERS_LAYOUT: "thread" };

interface Shapes {
  rounds: number;
  api: { sessions: number; messages: number };
  ingress: { warmUpSeconds: number; seconds: number };
  slack: { conversations: number; messages: number };
  inflight: { turns: number; turnMs: number; chunks: number };
}

function shapesFor(ctx: BenchContext): Shapes {
  return ctx.quick
    ? { rounds: 2, api: { sessions: 50, messages: 10 }, ingress: { warmUpSeconds: 1, seconds: 2 }, slack: { conversations: 30, messages: 10 }, inflight: { turns: 100, turnMs: 1_000, chunks: 120 } }
    : { rounds: 2, api: { sessions: 100, messages: 20 }, ingress: { warmUpSeconds: 2, seconds: 3 }, slack: { conversations: 100, messages: 10 }, inflight: { turns: 200, turnMs: 2_000, chunks: 120 } };
}

/** The run's shared pieces: one Redis whose commands only this benchmark runs, the fakes. */
interface Bench {
  ctx: BenchContext;
  shapes: Shapes;
  stats: CommandStatsReader;
  slack: FakeSlackApi;
  driver: SlackDriver;
  llm: FakeLlm;
  /** 60% of the gateway's maximum rate, fixed once per run so both arms take the same load. */
  rate60: number | null;
  failures: string[];
}

type Values = Record<string, number>;

async function runProbe(bench: Bench, probe: Probe, env: Record<string, string>, label: string): Promise<Values> {
  const { ctx, shapes } = bench;
  const dir = join(ctx.workDir, `mechanisms-${randomUUID().slice(0, 8)}`);
  mkdirSync(dir, { recursive: true });
  if (probe === "throughput") {
    const run = await measureGateway(ctx, shapes.api, env, label);
    if (run.errors.length) bench.failures.push(`${label}: ${run.errors.length} failed request(s), e.g. ${run.errors.find(Boolean) ?? ""}`);
    return { msgs_per_s: run.messagesPerSecond };
  }
  if (probe === "ingress") {
    const rate = bench.rate60 ?? 0;
    const run = await measureIngress(ctx, "one-process", shapes.ingress.seconds, rate, { env, warmUpSeconds: shapes.ingress.warmUpSeconds, waitForReplies: false });
    const refused = run.sent - (run.statuses.get(202) ?? 0);
    if (refused) bench.failures.push(`${label}: ${refused} ack(s) other than 202`);
    return { ack_p99: summarize(run.acksMs).p99 };
  }
  if (probe === "slack") {
    const system = await startSwitchboard({ redisUrl: ctx.redisUrl, slackApiUrl: bench.slack.url, dir, env });
    try {
      const { conversations, messages } = shapes.slack;
      await warmUp(bench.driver, system, shapes.slack);
      const run = await closedLoop(bench.driver, system, bench.slack, bench.stats, conversations, messages, null);
      const replies = summarizeReplies(run.mentions);
      if (replies.lost || replies.refused) bench.failures.push(`${label}: ${replies.lost} lost, ${replies.refused} refused`);
      return { slack_msgs_per_s: run.mentions.length / run.seconds, redis_per_msg: totalCount(run.redis) / run.mentions.length };
    } finally {
      await system.stop();
    }
  }
  const run = await measureInflight(ctx, bench.llm, shapes.inflight.turns, { env, redis: bench.stats });
  if (run.failed) bench.failures.push(`${label}: ${run.failed} turn(s) without their full reply`);
  return {
    cpu_per_turn: run.cpuMs / run.turns,
    reply_p50: summarize([...run.wsReplyMs, ...run.slackReplyMs]).p50,
    redis_per_turn: run.redisCommands / run.turns,
  };
}

interface Measured {
  spec: MechanismSpec;
  /** Per figure: the values of the arms with the mechanism and without, in the order run. */
  arms: Record<string, { with: number[]; without: number[] }>;
}

const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;

function ratio(figure: FigureSpec, w: number, wo: number): number {
  return figure.better === "higher" ? w / wo : wo / w;
}

/** The gain of the means; each round's own pair shows how far the noise moves it. */
function gainOf(figure: FigureSpec, arms: { with: number[]; without: number[] }): number {
  return ratio(figure, mean(arms.with), mean(arms.without));
}

function pairGains(figure: FigureSpec, arms: { with: number[]; without: number[] }): number[] {
  return arms.with.map((w, i) => ratio(figure, w, arms.without[i]));
}

async function measureMechanism(bench: Bench, spec: MechanismSpec): Promise<Measured> {
  const arms: Measured["arms"] = {};
  for (const figure of spec.figures) arms[figure.figure] = { with: [], without: [] };
  // Throughput first: the ingress loads' rate comes from it.
  const probes = PROBE_ORDER.filter((probe) => spec.figures.some((f) => f.probe === probe));
  for (const probe of probes) {
    if (probe === "ingress" && bench.rate60 === null) throw new Error("the ingress load needs the maximum rate first");
    for (let i = 0; i < bench.shapes.rounds; i++) {
      for (const side of ["with", "without"] as const) {
        const env = side === "with" ? WITH_ALL : { ...WITH_ALL, ...spec.without };
        const values = await runProbe(bench, probe, env, `${spec.key} ${side}, ${probe} ${i + 1}`);
        for (const figure of spec.figures) if (figure.probe === probe) arms[figure.figure][side].push(values[figure.figure]);
      }
      // The rate the ingress loads take: 60% of this run's throughput figure, else of these arms with the thread.
      if (probe === "throughput" && bench.rate60 === null && i === bench.shapes.rounds - 1) {
        bench.rate60 = 0.6 * (bench.ctx.measured.gateway_msgs_per_s ?? mean(arms.msgs_per_s.with));
      }
    }
  }
  return { spec, arms };
}

const fmt = (v: number): string => (!Number.isFinite(v) ? "n/a" : Math.abs(v) >= 100 ? Math.round(v).toLocaleString("en-US") : v.toFixed(Math.abs(v) >= 10 ? 1 : 2));

function describe(m: Measured): string {
  return m.spec.figures
    .map((f) => {
      const arms = m.arms[f.figure];
      const pairs = pairGains(f, arms).map((g) => g.toFixed(2)).join(", ");
      return `${f.label} ${arms.with.map(fmt).join(" / ")} with, ${arms.without.map(fmt).join(" / ")} without: ${gainOf(f, arms).toFixed(2)} (rounds ${pairs})`;
    })
    .join("; ");
}

function markdownTable(measured: Measured[]): string {
  const rows = measured.map((m) => {
    const gains = m.spec.figures.map((f) => gainOf(f, m.arms[f.figure]));
    const cells = m.spec.figures.map((f, i) => `${f.label} ${gains[i].toFixed(2)} (${pairGains(f, m.arms[f.figure]).map((g) => g.toFixed(2)).join(", ")})`);
    return `| ${m.spec.key} | ${cells.join("; ")} | ${gains.some((g) => g >= 1.1) ? "yes" : "no"} |`;
  });
  return ["| mechanism | gain (with / without, > 1 helps; each round's in brackets) | >= 10%? |", "|---|---|---|", ...rows, "| thread_scheduling | removed (CHANGELOG.md) | |"].join("\n");
}

export async function mechanismsBenchmark(ctx: BenchContext): Promise<BenchResult> {
  const shapes = shapesFor(ctx);
  const loadBefore = loadavg()[0];
  const redis = await ownRedis(ctx);
  const runCtx: BenchContext = { ...ctx, redisUrl: redis.url };
  const slack = await FakeSlackApi.start(BENCH_BOT_TOKEN);
  const tracker = new ReplyTracker();
  slack.listen(tracker);
  // Chunks closer together than the 30 ms frame, as a fast model streams them (the LLM benchmark's pace leaves 37 ms).
  const llm = await startFakeLlm({ ...DEFAULT_PACE, turnMs: shapes.inflight.turnMs, chunks: shapes.inflight.chunks });
  const bench: Bench = {
    ctx: runCtx,
    shapes,
    stats: await CommandStatsReader.connect(redis.url),
    slack,
    driver: new SlackDriver(tracker, Math.random().toString(36).slice(2, 6)),
    llm,
    rate60: null,
    failures: [],
  };
  const measured: Measured[] = [];
  try {
    for (const spec of MECHANISMS) measured.push(await measureMechanism(bench, spec));
  } finally {
    bench.stats.close();
    bench.driver.close();
    await llm.stop();
    await slack.close();
    await redis.stop();
  }
  const figures: Figure[] = measured.flatMap((m) =>
    m.spec.figures.map((f, i) => ({
      key: i === 0 ? `mechanism_${m.spec.key}_gain` : `mechanism_${m.spec.key}_${f.figure}_gain`,
      label: `${m.spec.key}: ${f.label}, with / without`,
      value: round(gainOf(f, m.arms[f.figure]), 3),
      unit: "",
    })),
  );
  figures.push({ key: "mechanisms_ingress_rate", label: "the ingress loads' rate (60% of the maximum)", value: round(bench.rate60 ?? Number.NaN, 0), unit: "msg/s" });
  return {
    name: "mechanisms",
    title: "What each mechanism buys: its figure with and without it",
    figures,
    notes: [
      `Arms alternate with, without (${shapes.rounds} rounds), each on a fresh gateway; a gain is with / without for a rate, without / with for a latency, CPU or count (> 1: the mechanism helps).`,
      `Loads: API closed loop ${shapes.api.sessions} x ${shapes.api.messages}; webhook acks at ${fmt(bench.rate60 ?? Number.NaN)}/s for ${shapes.ingress.seconds} s after ${shapes.ingress.warmUpSeconds} s; Slack closed loop ${shapes.slack.conversations} x ${shapes.slack.messages}; ${shapes.inflight.turns} streamed turns of ${shapes.inflight.turnMs} ms in ${shapes.inflight.chunks} chunks.`,
      `Load average (1 min) ${loadBefore.toFixed(2)} before, ${loadavg()[0].toFixed(2)} after.`,
      ...measured.map((m) => `${m.spec.key}: ${describe(m)}.`),
      ...bench.failures,
    ],
    series: [],
    markdown: markdownTable(measured),
  };
}
