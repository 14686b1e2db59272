// Slack: Switchboard against the bot users would build instead — Vercel's Chat SDK with its
// Slack adapter and ioredis state (children/peer-chat-sdk.ts) — fed the same signed `app_mention`
// deliveries, answering through the same fake Slack Web API, on the same Redis, in the same run,
// in counterbalanced rounds (peer, Switchboard, Switchboard, peer). Each round starts its server
// process afresh, so the other system's idle work never lands in a window, and runs:
//   1. closed loop: N conversations x M messages, each its own channel and thread, the next
//      message when the previous one's echo is shown;
//   2. steady: mentions at a fixed rate, open loop, over their own conversations;
//   3. burst: B new conversations start at once and go on closed loop for one second.
// The peer acknowledges before it records anything and keeps no transcript: not like for like,
// which is why it is the bar.
import { mkdirSync } from "node:fs";
import Database from "better-sqlite3";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { startEmbeddedRedis } from "../src/bus/embedded-redis.js";
import { FakeSlackApi } from "./lib/fake-slack-api.js";
import { readMemory } from "./lib/proc.js";
import { Progress } from "./lib/progress.js";
import { addCounts, CommandStatsReader, describePerMessage, totalCount, type CommandCounts } from "./lib/redis-commands.js";
import type { BenchContext, BenchResult, Figure, LatencySeries } from "./lib/result.js";
import { burstLoad, closedLoop, SETTLE_MS, SlackDriver, steadyLoad, warmUp, type ClosedLoopRun, type SlackShape, type SteadyRun } from "./lib/slack-load.js";
import { profileSwitchboard } from "./lib/slack-profile.js";
import { ReplyTracker, summarizeReplies, type TrackedMention } from "./lib/slack-replies.js";
import { BENCH_BOT_TOKEN, startPeer, startSwitchboard, SYSTEM_LABELS, type PeerQueueStats, type SystemName } from "./lib/slack-systems.js";
import { round, summarize } from "./lib/stats.js";

function shapeFor(ctx: BenchContext): SlackShape {
  return ctx.quick
    ? { conversations: 50, messages: 10, steadyRatePerS: 200, steadySeconds: 2, steadyConversations: 200, burstConversations: 200, burstSeconds: 1, rounds: 1 }
    : { conversations: 200, messages: 20, steadyRatePerS: 200, steadySeconds: 5, steadyConversations: 200, burstConversations: 200, burstSeconds: 1, rounds: 2 };
}

export interface Round {
  system: SystemName;
  closed: ClosedLoopRun;
  steady: SteadyRun;
  burst: TrackedMention[];
  peakRssMb: number;
  unexpectedPosts: number;
  /** The peer's queue strategy (zeros for Switchboard). */
  queue: PeerQueueStats;
  /** Switchboard: inbox rows its reconciler re-enqueued (every row pending at one of its passes). */
  reconciled: number;
}

async function runRound(
  ctx: BenchContext,
  name: SystemName,
  index: number,
  shape: SlackShape,
  env: { redisUrl: string; fake: FakeSlackApi; stats: CommandStatsReader; driver: SlackDriver },
): Promise<Round> {
  const options = { redisUrl: env.redisUrl, slackApiUrl: env.fake.url, dir: join(ctx.workDir, `slack-${name}-${index}`) };
  mkdirSync(options.dir, { recursive: true });
  const system = name === "peer" ? await startPeer(options) : await startSwitchboard(options);
  const label = `${SYSTEM_LABELS[name]}, round ${index + 1}`;
  const unexpectedBefore = env.driver.tracker.unexpectedPosts;
  let result: Round;
  try {
    await warmUp(env.driver, system, shape);

    const closedTotal = shape.conversations * shape.messages;
    const closedProgress = new Progress(`${label}: closed loop`, closedTotal, ctx.progress);
    const closed = await closedLoop(env.driver, system, env.fake, env.stats, shape.conversations, shape.messages, closedProgress);
    closedProgress.finish();

    const steadyProgress = new Progress(`${label}: ${shape.steadyRatePerS}/s`, shape.steadyRatePerS * shape.steadySeconds, ctx.progress);
    const steady = await steadyLoad(env.driver, system, shape, steadyProgress);
    steadyProgress.finish();

    const burst = await burstLoad(env.driver, system, shape, null);
    await sleep(SETTLE_MS);
    result = {
      system: name,
      closed,
      steady,
      burst,
      peakRssMb: readMemory(system.pid).peakMb,
      unexpectedPosts: env.driver.tracker.unexpectedPosts - unexpectedBefore,
      queue: (await system.queueStats?.()) ?? { queued: 0, skipped: 0, stranded: 0 },
      reconciled: 0,
    };
  } finally {
    await system.stop();
  }
  if (name === "switchboard") result.reconciled = reconciledRows(join(options.dir, "switchboard.db"));
  return result;
}

/**
 * A B, then B A: over two rounds each system runs first once, so a machine that speeds up or slows
 * down steadily through the benchmark (seen drifting by a third within minutes) favours
 * neither. Strictly alternating A B A B, the second system always ran later than its pair.
 */
function systemsOfRound(round: number): readonly SystemName[] {
  return round % 2 === 0 ? ["peer", "switchboard"] : ["switchboard", "peer"];
}

/** The reconciler stamps enqueued_at on each inbox row it re-enqueues; the hot path never does. */
function reconciledRows(dbPath: string): number {
  const db = new Database(dbPath, { readonly: true });
  try {
    return (db.prepare("SELECT count(*) AS n FROM inbox WHERE enqueued_at IS NOT NULL").get() as { n: number }).n;
  } finally {
    db.close();
  }
}

/** A Redis only this benchmark uses: command counts of a shared server would include its other clients. */
export async function ownRedis(ctx: BenchContext): Promise<{ url: string; stop(): Promise<void>; shared: boolean }> {
  if (ctx.redisPrivate) return { url: ctx.redisUrl, stop: async () => undefined, shared: false };
  const dir = join(ctx.workDir, "slack-redis");
  mkdirSync(dir, { recursive: true });
  const server = await startEmbeddedRedis(dir);
  return { url: server.url, stop: () => server.stop(), shared: true };
}

interface SystemFigures {
  rounds: Round[];
  msgsPerS: number[];
  closedMessages: number;
  closed: ReturnType<typeof summarizeReplies>;
  steady: ReturnType<typeof summarizeReplies>;
  burst: ReturnType<typeof summarizeReplies>;
  duplicates: number;
  lost: number;
  refused: number;
  unexpectedPosts: number;
  queue: PeerQueueStats;
  reconciled: number;
  /** Closed-loop mentions whose echo took longer than SLOW_REPLY_MS. */
  slowReplies: number;
  slackCallsPerMsg: number;
  slackCalls: Record<string, number>;
  redisPerMsg: number;
  redis: CommandCounts;
  cpuMsPerMsg: number;
  peakRssMb: number;
  steadyLagP99Ms: number;
}

function systemFigures(rounds: Round[]): SystemFigures {
  const closedMentions = rounds.flatMap((r) => r.closed.mentions);
  const closedMessages = closedMentions.length;
  const closed = summarizeReplies(closedMentions);
  const steady = summarizeReplies(rounds.flatMap((r) => r.steady.mentions));
  const burst = summarizeReplies(rounds.flatMap((r) => r.burst));
  const redis: CommandCounts = {};
  const slackCalls: Record<string, number> = {};
  for (const r of rounds) {
    addCounts(redis, r.closed.redis);
    addCounts(slackCalls, r.closed.slackCalls);
  }
  const all = [closed, steady, burst];
  return {
    rounds,
    msgsPerS: rounds.map((r) => r.closed.mentions.length / r.closed.seconds),
    closedMessages,
    closed,
    steady,
    burst,
    duplicates: all.reduce((n, s) => n + s.duplicates, 0),
    lost: all.reduce((n, s) => n + s.lost, 0),
    refused: all.reduce((n, s) => n + s.refused, 0),
    unexpectedPosts: rounds.reduce((n, r) => n + r.unexpectedPosts, 0),
    reconciled: rounds.reduce((n, r) => n + r.reconciled, 0),
    slowReplies: closed.finalReplyMs.filter((ms) => ms > SLOW_REPLY_MS).length,
    queue: {
      queued: rounds.reduce((n, r) => n + r.queue.queued, 0),
      skipped: rounds.reduce((n, r) => n + r.queue.skipped, 0),
      stranded: rounds.reduce((n, r) => n + r.queue.stranded, 0),
    },
    slackCallsPerMsg: totalCount(slackCalls) / closedMessages,
    slackCalls,
    redisPerMsg: totalCount(redis) / closedMessages,
    redis,
    cpuMsPerMsg: rounds.reduce((n, r) => n + r.closed.cpuMs, 0) / closedMessages,
    peakRssMb: Math.max(...rounds.map((r) => r.peakRssMb)),
    steadyLagP99Ms: Math.max(...rounds.map((r) => r.steady.sendLagP99Ms)),
  };
}

/** An echo later than this in the closed loop is worth a note. */
const SLOW_REPLY_MS = 5_000;

const mean = (values: number[]): number => values.reduce((a, b) => a + b, 0) / values.length;

function fmt(value: number): string {
  if (!Number.isFinite(value)) return "n/a";
  if (Math.abs(value) >= 1000) return Math.round(value).toLocaleString("en-US");
  if (Math.abs(value) >= 100) return value.toFixed(0);
  if (Math.abs(value) >= 10) return value.toFixed(1);
  return value.toFixed(2);
}

/** `mean (round 1 / round 2)` when there is more than one round. */
function perRound(values: number[], combined: number): string {
  return values.length > 1 ? `${fmt(combined)} (${values.map(fmt).join(" / ")})` : fmt(combined);
}

function sideBySide(peer: SystemFigures, sb: SystemFigures, shape: SlackShape): string {
  const p99 = (xs: number[]): number => summarize(xs).p99;
  const p50 = (xs: number[]): number => summarize(xs).p50;
  const roundP = (f: SystemFigures, pick: (r: Round) => TrackedMention[], q: (xs: number[]) => number, key: "ackMs" | "finalReplyMs" | "firstReplyMs"): number[] =>
    f.rounds.map((r) => q(summarizeReplies(pick(r))[key]));
  const steady = (r: Round): TrackedMention[] => r.steady.mentions;
  const burst = (r: Round): TrackedMention[] => r.burst;
  const rows: Array<[string, string, string, string]> = [
    ["messages/s (closed loop)", perRound(peer.msgsPerS, mean(peer.msgsPerS)), perRound(sb.msgsPerS, mean(sb.msgsPerS)), ">= the peer's"],
    ["ack p50 / p99, closed loop (ms)", `${fmt(p50(peer.closed.ackMs))} / ${fmt(p99(peer.closed.ackMs))}`, `${fmt(p50(sb.closed.ackMs))} / ${fmt(p99(sb.closed.ackMs))}`, ""],
    ["echo shown p50 / p99, closed loop (ms)", `${fmt(p50(peer.closed.finalReplyMs))} / ${fmt(p99(peer.closed.finalReplyMs))}`, `${fmt(p50(sb.closed.finalReplyMs))} / ${fmt(p99(sb.closed.finalReplyMs))}`, ""],
    ["first post p50 / p99, closed loop (ms)", `${fmt(p50(peer.closed.firstReplyMs))} / ${fmt(p99(peer.closed.firstReplyMs))}`, `${fmt(p50(sb.closed.firstReplyMs))} / ${fmt(p99(sb.closed.firstReplyMs))}`, ""],
    [`ack p99 at a steady ${shape.steadyRatePerS} msg/s (ms)`, perRound(roundP(peer, steady, p99, "ackMs"), p99(peer.steady.ackMs)), perRound(roundP(sb, steady, p99, "ackMs"), p99(sb.steady.ackMs)), "<= 2x the peer's"],
    [`ack p99 in the first second, ${shape.burstConversations} conversations at once (ms)`, perRound(roundP(peer, burst, p99, "ackMs"), p99(peer.burst.ackMs)), perRound(roundP(sb, burst, p99, "ackMs"), p99(sb.burst.ackMs)), "<= the peer's"],
    ["process CPU per message (ms)", fmt(peer.cpuMsPerMsg), fmt(sb.cpuMsPerMsg), ""],
    ["Redis commands per message", fmt(peer.redisPerMsg), fmt(sb.redisPerMsg), "<= 30"],
    ["Slack API calls per message", fmt(peer.slackCallsPerMsg), fmt(sb.slackCallsPerMsg), ""],
    ["peak resident memory (MB)", fmt(peer.peakRssMb), fmt(sb.peakRssMb), "<= 250"],
    ["duplicates / lost / refused acks", `${peer.duplicates} / ${peer.lost} / ${peer.refused}`, `${sb.duplicates} / ${sb.lost} / ${sb.refused}`, "0 / 0 / 0"],
  ];
  const lines = [
    `| per message, ${shape.conversations} conversations x ${shape.messages} messages | ${SYSTEM_LABELS.peer} | ${SYSTEM_LABELS.switchboard} | target |`,
    "|---|---|---|---|",
    ...rows.map((r) => `| ${r.join(" | ")} |`),
    "",
    `Redis commands per message (closed loop, INFO commandstats; commands run by scripts included): ${SYSTEM_LABELS.peer}: ${describePerMessage(peer.redis, peer.closedMessages)}; ` +
      `${SYSTEM_LABELS.switchboard}: ${describePerMessage(sb.redis, sb.closedMessages)}.`,
    "",
    `Slack API calls per message: ${SYSTEM_LABELS.peer}: ${describePerMessage(peer.slackCalls, peer.closedMessages, 0.001)}; ${SYSTEM_LABELS.switchboard}: ${describePerMessage(sb.slackCalls, sb.closedMessages, 0.001)}.`,
  ];
  return lines.join("\n");
}

export async function slackBenchmark(ctx: BenchContext): Promise<BenchResult> {
  const shape = shapeFor(ctx);
  const redis = await ownRedis(ctx);
  const fake = await FakeSlackApi.start(BENCH_BOT_TOKEN);
  const tracker = new ReplyTracker();
  fake.listen(tracker);
  const driver = new SlackDriver(tracker, Math.random().toString(36).slice(2, 6));
  const stats = await CommandStatsReader.connect(redis.url);
  const rounds: Round[] = [];
  let profileMarkdown: string | null = null;
  try {
    for (let i = 0; i < shape.rounds; i++) {
      for (const name of systemsOfRound(i)) {
        rounds.push(await runRound(ctx, name, i, shape, { redisUrl: redis.url, fake, stats, driver }));
      }
    }
    if (ctx.profile) {
      profileMarkdown = await profileSwitchboard(ctx, shape, { redisUrl: redis.url, fake, stats, driver });
    }
  } finally {
    stats.close();
    driver.close();
    await fake.close();
    await redis.stop();
  }

  const peer = systemFigures(rounds.filter((r) => r.system === "peer"));
  const sb = systemFigures(rounds.filter((r) => r.system === "switchboard"));
  const peerRate = mean(peer.msgsPerS);
  const sbRate = mean(sb.msgsPerS);
  const peerAck = summarize(peer.steady.ackMs);
  const sbAck = summarize(sb.steady.ackMs);
  const peerBurst = summarize(peer.burst.ackMs);
  const sbBurst = summarize(sb.burst.ackMs);
  const pair = (prefix: "peer" | "slack", f: SystemFigures): Figure[] => {
    const who = prefix === "peer" ? SYSTEM_LABELS.peer : SYSTEM_LABELS.switchboard;
    const closedAck = summarize(f.closed.ackMs);
    const reply = summarize(f.closed.finalReplyMs);
    const first = summarize(f.closed.firstReplyMs);
    return [
      { key: `${prefix}_closed_ack_p50_ms`, label: `${who}: ack p50, closed loop`, value: round(closedAck.p50), unit: "ms" },
      { key: `${prefix}_closed_ack_p99_ms`, label: `${who}: ack p99, closed loop`, value: round(closedAck.p99), unit: "ms" },
      { key: `${prefix}_first_reply_p50_ms`, label: `${who}: first post p50, closed loop`, value: round(first.p50), unit: "ms" },
      { key: `${prefix}_first_reply_p99_ms`, label: `${who}: first post p99, closed loop`, value: round(first.p99), unit: "ms" },
      { key: `${prefix}_reply_p50_ms`, label: `${who}: echo shown p50, closed loop`, value: round(reply.p50), unit: "ms" },
      { key: `${prefix}_reply_p99_ms`, label: `${who}: echo shown p99, closed loop`, value: round(reply.p99), unit: "ms" },
    ];
  };
  const zero = { op: "<=", value: 0 } as const;
  const figures: Figure[] = [
    { key: "peer_msgs_per_s", label: `${SYSTEM_LABELS.peer}: messages/s, closed loop`, value: round(peerRate, 1), unit: "msg/s" },
    { key: "slack_msgs_per_s", label: `${SYSTEM_LABELS.switchboard}: messages/s, closed loop`, value: round(sbRate, 1), unit: "msg/s" },
    { key: "peer_ratio", label: "messages/s, Switchboard / Chat SDK", value: round(sbRate / peerRate, 3), unit: "", target: { op: ">=", value: 1 } },
    { key: "peer_ack_p50_ms", label: `${SYSTEM_LABELS.peer}: ack p50 at ${shape.steadyRatePerS} msg/s`, value: round(peerAck.p50), unit: "ms" },
    { key: "peer_ack_p99_ms", label: `${SYSTEM_LABELS.peer}: ack p99 at ${shape.steadyRatePerS} msg/s`, value: round(peerAck.p99), unit: "ms" },
    { key: "slack_ack_p50_ms", label: `${SYSTEM_LABELS.switchboard}: ack p50 at ${shape.steadyRatePerS} msg/s`, value: round(sbAck.p50), unit: "ms" },
    { key: "slack_ack_p99_ms", label: `${SYSTEM_LABELS.switchboard}: ack p99 at ${shape.steadyRatePerS} msg/s`, value: round(sbAck.p99), unit: "ms" },
    { key: "slack_peer_ack_ratio", label: `ack p99 at ${shape.steadyRatePerS} msg/s, Switchboard / Chat SDK`, value: round(sbAck.p99 / peerAck.p99, 2), unit: "", target: { op: "<=", value: 2 } },
    { key: "peer_burst_ack_p99_ms", label: `${SYSTEM_LABELS.peer}: ack p99, first second of ${shape.burstConversations} conversations`, value: round(peerBurst.p99), unit: "ms" },
    { key: "slack_burst_ack_p99_ms", label: `${SYSTEM_LABELS.switchboard}: ack p99, first second of ${shape.burstConversations} conversations`, value: round(sbBurst.p99), unit: "ms" },
    { key: "slack_peer_burst_ratio", label: "burst ack p99, Switchboard / Chat SDK", value: round(sbBurst.p99 / peerBurst.p99, 2), unit: "", target: { op: "<=", value: 1 } },
    ...pair("peer", peer),
    ...pair("slack", sb),
    { key: "peer_cpu_ms_per_msg", label: `${SYSTEM_LABELS.peer}: process CPU per message`, value: round(peer.cpuMsPerMsg, 3), unit: "ms" },
    { key: "slack_cpu_ms_per_msg", label: `${SYSTEM_LABELS.switchboard}: process CPU per message`, value: round(sb.cpuMsPerMsg, 3), unit: "ms" },
    { key: "peer_redis_commands_per_msg", label: `${SYSTEM_LABELS.peer}: Redis commands per message`, value: round(peer.redisPerMsg, 1), unit: "" },
    { key: "redis_commands_per_msg", label: `${SYSTEM_LABELS.switchboard}: Redis commands per message`, value: round(sb.redisPerMsg, 1), unit: "", target: { op: "<=", value: 30 } },
    { key: "peer_slack_calls_per_msg", label: `${SYSTEM_LABELS.peer}: Slack API calls per message`, value: round(peer.slackCallsPerMsg, 2), unit: "" },
    { key: "slack_api_calls_per_msg", label: `${SYSTEM_LABELS.switchboard}: Slack API calls per message`, value: round(sb.slackCallsPerMsg, 2), unit: "" },
    { key: "peer_rss_mb", label: `${SYSTEM_LABELS.peer}: peak resident memory`, value: round(peer.peakRssMb, 0), unit: "MB" },
    { key: "slack_rss_mb", label: `${SYSTEM_LABELS.switchboard}: peak resident memory`, value: round(sb.peakRssMb, 0), unit: "MB", target: { op: "<=", value: 250 } },
    { key: "peer_duplicates", label: `${SYSTEM_LABELS.peer}: mentions answered twice`, value: peer.duplicates, unit: "" },
    { key: "peer_lost", label: `${SYSTEM_LABELS.peer}: accepted mentions never answered`, value: peer.lost, unit: "" },
    { key: "slack_duplicates", label: `${SYSTEM_LABELS.switchboard}: mentions answered twice`, value: sb.duplicates, unit: "", target: zero },
    { key: "slack_lost", label: `${SYSTEM_LABELS.switchboard}: accepted mentions never answered`, value: sb.lost, unit: "", target: zero },
    { key: "slack_refused", label: `${SYSTEM_LABELS.switchboard}: acks other than 200`, value: sb.refused, unit: "", target: zero },
  ];
  const roundOrder = rounds.map((r) => (r.system === "peer" ? "A" : "B")).join(" ");
  const notes = [
    `Rounds ${roundOrder} (A: ${SYSTEM_LABELS.peer}, B: ${SYSTEM_LABELS.switchboard}), each on a freshly started server process after an uncounted warm-up of the closed loop's shape on other conversations; ` +
      `latency percentiles pool the rounds, messages/s is their mean (per round: ${SYSTEM_LABELS.peer} ${peer.msgsPerS.map(fmt).join(", ")}; ${SYSTEM_LABELS.switchboard} ${sb.msgsPerS.map(fmt).join(", ")}).`,
    `Closed loop: ${shape.conversations} conversations x ${shape.messages} mentions, each conversation its own channel, user and thread; the next mention once the previous echo is shown. ` +
      `Steady: ${shape.steadyRatePerS} mentions/s for ${shape.steadySeconds} s, open loop, over ${shape.steadyConversations} conversations (generator lag p99 ${fmt(Math.max(peer.steadyLagP99Ms, sb.steadyLagP99Ms))} ms). ` +
      `Burst: ${shape.burstConversations} new conversations start at once and go on closed loop for ${shape.burstSeconds} s.`,
    `${SYSTEM_LABELS.peer}: \`chat\` with \`@chat-adapter/slack\` (signed webhooks, \`apiUrl\` at the fake Slack) and \`@chat-adapter/state-ioredis\`, concurrency \`queue\`, on node:http; ` +
      "it acknowledges before it handles the message (waitUntil) and posts one chat.postMessage per mention. " +
      `${SYSTEM_LABELS.switchboard}: \`switchboard serve\` (one process, default settings) with SLACK_SIGNING_SECRET, SLACK_BOT_TOKEN and SLACK_API_URL at the fake, echo model; it acknowledges after the inbox row and the job.`,
    "Ack: POST of the signed event callback until its HTTP answer. First post: until the first chat.postMessage in the mention's thread; echo shown: until Slack shows the full echo (a post or an edit).",
    "Per message (closed-loop window, first send to last echo plus 0.5 s): process CPU from /proc/<pid>/stat (every thread), Redis commands from INFO commandstats deltas " +
      "(the server's own count: commands that Lua scripts run are counted too), Slack API calls counted by the fake; peak resident memory is VmHWM of the server process over the whole round.",
    redis.shared
      ? "REDIS_URL points at a shared server, whose command counts include its other clients: this benchmark ran on a private redis-server of its own."
      : "Same Redis as the rest of the run (a private redis-server), used by one system at a time.",
  ];
  if (peer.unexpectedPosts + sb.unexpectedPosts > 0) {
    notes.push(`Bot posts in threads with no mention waiting for one: ${SYSTEM_LABELS.peer} ${peer.unexpectedPosts}, ${SYSTEM_LABELS.switchboard} ${sb.unexpectedPosts}.`);
  }
  const refusals = (f: SystemFigures): string =>
    (["closed", "steady", "burst"] as const)
      .filter((w) => f[w].refused > 0)
      .map((w) => `${w}: ${Object.entries(f[w].refusedBy).map(([status, n]) => `${status} x${n}`).join(", ")}`)
      .join("; ");
  for (const [name, f] of [["peer", peer], ["switchboard", sb]] as const) {
    if (f.refused > 0) notes.push(`${SYSTEM_LABELS[name]}: ${f.refused} acks other than 200 (${refusals(f)}); no reply is expected for those.`);
  }
  const lostBy = (f: SystemFigures): string => `closed loop ${f.closed.lost}, steady ${f.steady.lost}, burst ${f.burst.lost}`;
  if (peer.lost > 0 || peer.queue.queued > 0) {
    notes.push(
      `${SYSTEM_LABELS.peer}: ${peer.lost} accepted mentions never answered (${lostBy(peer)}). Its queue strategy queued ${peer.queue.queued} mentions ` +
        `that arrived while their thread's handler ran; it skipped ${peer.queue.skipped} (of those waiting only the latest is answered) ` +
        `and never took ${peer.queue.stranded} off the queue (queued after the handler last looked at the queue, before it released the thread's lock).`,
    );
  }
  notes.push(
    `Closed-loop echoes shown later than ${SLOW_REPLY_MS / 1000} s: ${SYSTEM_LABELS.peer} ${peer.slowReplies} of ${peer.closedMessages}, ` +
      `${SYSTEM_LABELS.switchboard} ${sb.slowReplies} of ${sb.closedMessages}. ${SYSTEM_LABELS.switchboard}'s reconciler re-enqueued ${sb.reconciled} inbox rows ` +
      "over its rounds (every row pending at one of its 30 s passes: a row whose wake-up was lost waits for the next pass; the closed loop's last such row ends its window).",
  );
  if (sb.lost > 0) notes.push(`${SYSTEM_LABELS.switchboard}: ${sb.lost} accepted mentions never answered (${lostBy(sb)}).`);
  const series: LatencySeries[] = [
    { name: `Slack ack at ${shape.steadyRatePerS}/s, ${SYSTEM_LABELS.peer}`, samplesMs: peer.steady.ackMs },
    { name: `Slack ack at ${shape.steadyRatePerS}/s, ${SYSTEM_LABELS.switchboard}`, samplesMs: sb.steady.ackMs, targetMs: 2 * peerAck.p99 },
    { name: `Slack burst ack, ${SYSTEM_LABELS.peer}`, samplesMs: peer.burst.ackMs },
    { name: `Slack burst ack, ${SYSTEM_LABELS.switchboard}`, samplesMs: sb.burst.ackMs, targetMs: peerBurst.p99 },
  ];
  const markdown = [`### Slack: ${SYSTEM_LABELS.switchboard} and ${SYSTEM_LABELS.peer} side by side`, "", sideBySide(peer, sb, shape)];
  if (profileMarkdown) markdown.push("", profileMarkdown);
  return {
    name: "slack",
    title: `Slack: ${SYSTEM_LABELS.switchboard} vs ${SYSTEM_LABELS.peer} (same events, fake Slack, Redis)`,
    figures,
    notes,
    series,
    markdown: markdown.join("\n"),
  };
}
