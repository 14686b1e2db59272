// Turns in flight in one `serve` process: N streamed turns started at once, half API requests whose
// session a WebSocket subscriber watches (children/ws-turns.ts), half Slack mentions answered in
// their threads through the fake Slack Web API (streamed as a post and edits). The server's peak
// resident memory, CPU over the window, and each reply's time until its full text was shown.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { WsTurnsCommand, WsTurnsMessage } from "../children/ws-turns.js";
import { spawnChild } from "./child.js";
import { fakeReply } from "./fake-llm-reply.js";
import { llmEnv, type FakeLlm } from "./fake-llm.js";
import { FakeSlackApi } from "./fake-slack-api.js";
import { BENCH_API_KEY, gatewayEnv, startGatewayProcess } from "./gateway-process.js";
import { runConversations } from "./llm-chat-load.js";
import { busyPercent, readCpuMs, readMachineCpu, readMemory } from "./proc.js";
import { benchPrefix } from "./redis.js";
import { totalCount, type CommandStatsReader } from "./redis-commands.js";
import type { BenchContext } from "./result.js";
import { SlackDriver } from "./slack-load.js";
import { ReplyTracker, summarizeReplies, type TrackedMention } from "./slack-replies.js";
import { BENCH_BOT_TOKEN, BENCH_SIGNING_SECRET, type SystemUnderTest } from "./slack-systems.js";

export interface InflightRun {
  turns: number;
  /** Of those, API requests watched over WebSocket (the rest are Slack mentions). */
  wsTurns: number;
  warmUpTurns: number;
  concurrency: number;
  wsReplyMs: number[];
  wsFirstDeltaMs: number[];
  wsDeltaFrames: number;
  slackReplyMs: number[];
  slackFirstPostMs: number[];
  /** Turns whose full reply was not shown (either half). */
  failed: number;
  errors: string[];
  cpuMs: number;
  /** Redis commands over the window (NaN unless a reader was given). */
  redisCommands: number;
  peakRssMb: number;
  slackCalls: Record<string, number>;
  /** Where the time went: each model call's arrival and end at the fake, from the sends. */
  modelStartMs: number[];
  modelEndMs: number[];
  fakeLoopDelayP99Ms: number;
  /** CPU of the fake model and of the WebSocket clients over the window (they share the cores). */
  fakeCpuMs: number;
  clientsCpuMs: number;
  machineBusyPct: number;
}

/** Long enough for every turn of the wave on a busy machine; a reply later than this is a failure. */
const REPLY_TIMEOUT_MS = 90_000;
const WARM_UP_TURNS = 20;

/** What another benchmark changes (bench/mechanisms.ts): the gateway's environment; a Redis whose commands the window counts. */
export interface InflightOptions {
  env?: Record<string, string>;
  redis?: CommandStatsReader;
}

export async function measureInflight(ctx: BenchContext, fake: FakeLlm, turns: number, options: InflightOptions = {}): Promise<InflightRun> {
  const concurrency = 1024;
  const wsTurns = Math.floor(turns / 2);
  const slackTurns = turns - wsTurns;
  const dir = join(ctx.workDir, `llm-inflight-${Math.random().toString(36).slice(2, 8)}`);
  mkdirSync(dir, { recursive: true });
  const slack = await FakeSlackApi.start(BENCH_BOT_TOKEN);
  const tracker = new ReplyTracker();
  slack.listen(tracker);
  const tag = Math.random().toString(36).slice(2, 6);
  const driver = new SlackDriver(tracker, tag, fakeReply);
  const env = gatewayEnv(dir, ctx.redisUrl, benchPrefix("llm-inflight"), {
    WORKER_CONCURRENCY: String(concurrency),
    SLACK_SIGNING_SECRET: BENCH_SIGNING_SECRET,
    SLACK_BOT_TOKEN: BENCH_BOT_TOKEN,
    SLACK_API_URL: slack.url,
    ...llmEnv(fake, "proc-serve"),
    ...options.env,
  });
  const gateway = await startGatewayProcess(["serve"], env);
  const url = gateway.url as string;
  const system: SystemUnderTest = { name: "switchboard", eventsUrl: `${url}/slack/events`, pid: gateway.pid, stop: async () => undefined };
  const clients = spawnChild<WsTurnsCommand, WsTurnsMessage>("ws-turns.ts", [url, BENCH_API_KEY, String(wsTurns), tag]);
  try {
    // Uncounted: the first turns' code paths and connections, on both paths.
    const warm = Array.from({ length: WARM_UP_TURNS }, () => driver.send(system, driver.conversation()));
    await runConversations(url, WARM_UP_TURNS, 1);
    await driver.drain(await Promise.all(warm), REPLY_TIMEOUT_MS);
    await clients.next((m): m is Extract<WsTurnsMessage, { type: "ready" }> => m.type === "ready", 120_000);

    const callsBefore = slack.callCounts();
    fake.reset();
    const machineBefore = readMachineCpu();
    const fakeCpuBefore = readCpuMs(fake.pid);
    const clientsCpuBefore = readCpuMs(clients.pid);
    const cpuBefore = readCpuMs(gateway.pid);
    const redisBefore = await options.redis?.snapshot();
    const goMs = Number(process.hrtime.bigint()) / 1e6;
    const wsDone = clients.next((m): m is Extract<WsTurnsMessage, { type: "done" }> => m.type === "done", REPLY_TIMEOUT_MS + 30_000);
    clients.send({ type: "go", timeoutMs: REPLY_TIMEOUT_MS });
    const mentions: TrackedMention[] = await Promise.all(Array.from({ length: slackTurns }, () => driver.send(system, driver.conversation())));
    await driver.drain(mentions, REPLY_TIMEOUT_MS);
    const ws = await wsDone;
    const cpuMs = readCpuMs(gateway.pid) - cpuBefore;
    const redisCommands = options.redis && redisBefore ? totalCount(options.redis.window(redisBefore, await options.redis.snapshot())) : Number.NaN;
    const fakeCpuMs = readCpuMs(fake.pid) - fakeCpuBefore;
    const clientsCpuMs = readCpuMs(clients.pid) - clientsCpuBefore;
    const machineBusyPct = busyPercent(machineBefore, readMachineCpu());
    const model = await fake.timings();
    const callsAfter = slack.callCounts();
    const slackCalls = Object.fromEntries(Object.entries(callsAfter).map(([m, n]) => [m, n - (callsBefore[m] ?? 0)] as const).filter(([, n]) => n > 0));
    const replies = summarizeReplies(mentions);
    const errors = [...ws.errors];
    if (replies.refused) errors.push(`Slack: ${replies.refused} mention(s) refused: ${JSON.stringify(replies.refusedBy)}`);
    if (replies.lost) errors.push(`Slack: ${replies.lost} accepted mention(s) without their full reply`);
    return {
      turns,
      wsTurns,
      warmUpTurns: WARM_UP_TURNS,
      concurrency,
      wsReplyMs: ws.replyMs,
      wsFirstDeltaMs: ws.firstDeltaMs,
      wsDeltaFrames: ws.deltaFrames,
      slackReplyMs: replies.finalReplyMs,
      slackFirstPostMs: replies.firstReplyMs,
      failed: ws.failed + replies.refused + replies.lost,
      errors,
      cpuMs,
      redisCommands,
      peakRssMb: readMemory(gateway.pid).peakMb,
      slackCalls,
      modelStartMs: model.arrivedMs.map((ms) => ms - goMs),
      modelEndMs: model.endedMs.map((ms) => ms - goMs),
      fakeLoopDelayP99Ms: model.loopDelayP99Ms,
      fakeCpuMs,
      clientsCpuMs,
      machineBusyPct,
    };
  } finally {
    await clients.stop();
    driver.close();
    await gateway.stop();
    await slack.close();
  }
}
