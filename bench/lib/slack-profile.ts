// `npm run bench -- --only=slack --profile`: one more Switchboard round, closed loop only, with
// the server under `node --cpu-prof` and the counting preload (instrument-preload.ts). Its
// figures are not the benchmark's (the profiler and the counting cost time); it answers where the
// time goes and how many SQLite transactions and Redis commands one message costs. Both flags
// reach every thread: serve's workers thread inherits the process's node flags, so it writes a
// profile of its own and counts its own statements and commands. The profiles are summarised
// over the closed-loop window alone (start-up and warm-up left out), per thread and for the
// process, and kept in bench/results (slack-switchboard.cpuprofile for the main thread).
import { copyFileSync, mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { combineSummaries, summarizeCpuProfile, threadProfiles } from "./cpu-profile.js";
import type { FakeSlackApi } from "./fake-slack-api.js";
import { sumCounters, windowByThread, type ProcessCounters } from "./process-counters.js";
import { Progress } from "./progress.js";
import type { CommandStatsReader } from "./redis-commands.js";
import type { BenchContext } from "./result.js";
import { closedLoop, warmUp, type SlackDriver, type SlackShape } from "./slack-load.js";
import { renderProfileReport, threadRole, type ProfiledThread } from "./slack-profile-report.js";
import { startSwitchboard } from "./slack-systems.js";
import { readProcessCounters } from "./thread-counters.js";

const RESULTS_DIR = join(import.meta.dirname, "..", "results");
/** `--require`, not `--import`: node runs only `--require` preloads in worker threads too. */
const PRELOAD = ["--require", createRequire(import.meta.url).resolve("tsx/cjs"), "--require", join(import.meta.dirname, "instrument-preload.ts")];

/** bench/results/slack-switchboard[-<thread>].cpuprofile; none for tsx's loader threads. */
function resultName(thread: ProfiledThread): string | null {
  switch (thread.role) {
    case "main":
      return "slack-switchboard.cpuprofile";
    case "workers":
    case "checkpointer":
      return `slack-switchboard-${thread.role}.cpuprofile`;
    case "loader":
      return null;
    default:
      return `slack-switchboard-thread${thread.threadId}.cpuprofile`;
  }
}

export async function profileSwitchboard(
  ctx: BenchContext,
  shape: SlackShape,
  env: { redisUrl: string; fake: FakeSlackApi; stats: CommandStatsReader; driver: SlackDriver },
): Promise<string> {
  const dir = join(ctx.workDir, "slack-profile");
  const profileDir = join(dir, "cpu");
  const socket = join(dir, "counters.sock");
  mkdirSync(profileDir, { recursive: true });
  const system = await startSwitchboard({
    redisUrl: env.redisUrl,
    slackApiUrl: env.fake.url,
    dir,
    nodeArgs: ["--cpu-prof", "--cpu-prof-dir", profileDir, ...PRELOAD],
    env: { BENCH_COUNTERS_SOCKET: socket },
  });
  const messages = shape.conversations * shape.messages;
  let run: Awaited<ReturnType<typeof closedLoop>>;
  let before: ProcessCounters;
  let after: ProcessCounters;
  let fromUs: number;
  let toUs: number;
  try {
    await warmUp(env.driver, system, shape);
    before = await readProcessCounters(socket);
    const progress = new Progress("Switchboard, profiled: closed loop", messages, ctx.progress);
    // V8 stamps samples with the monotonic clock process.hrtime reads, in every thread.
    fromUs = Number(process.hrtime.bigint() / 1000n);
    run = await closedLoop(env.driver, system, env.fake, env.stats, shape.conversations, shape.messages, progress);
    toUs = Number(process.hrtime.bigint() / 1000n);
    progress.finish();
    after = await readProcessCounters(socket);
  } finally {
    // Each thread's profile is written when the thread exits.
    await system.stop();
  }

  const counted = new Map(windowByThread(before, after).map((t) => [t.threadId, t.counters]));
  const lifetimeSql = (threadId: number): string[] => Object.keys(after.threads.find((t) => t.threadId === threadId)?.counters.sqlite.autocommitSql ?? {});
  const profiles = threadProfiles(profileDir, system.pid);
  let windowed = true;
  let summaries = profiles.map((p) => summarizeCpuProfile(p.file, { fromUs, toUs }));
  if (summaries.length > 0 && summaries.every((s) => s.samples === 0)) {
    // Clocks that do not line up: fall back to the whole profiles rather than show nothing.
    windowed = false;
    summaries = profiles.map((p) => summarizeCpuProfile(p.file));
  }
  const threads: ProfiledThread[] = profiles.map((p, i) => ({
    threadId: p.threadId,
    role: threadRole(p.threadId, summaries[i].scripts, lifetimeSql(p.threadId)),
    profile: summaries[i],
    counters: counted.get(p.threadId) ?? null,
  }));
  // A thread that counted but left no profile (it did not exit cleanly) still shows its counts.
  for (const [threadId, counters] of counted) {
    if (!threads.some((t) => t.threadId === threadId)) threads.push({ threadId, role: threadRole(threadId, null, lifetimeSql(threadId)), profile: null, counters });
  }
  mkdirSync(RESULTS_DIR, { recursive: true });
  const kept: string[] = [];
  for (const [i, p] of profiles.entries()) {
    const name = resultName(threads[i]);
    if (!name) continue;
    copyFileSync(p.file, join(RESULTS_DIR, name));
    kept.push(name);
  }
  return renderProfileReport({
    conversations: shape.conversations,
    messagesPerConversation: shape.messages,
    msgsPerS: messages / run.seconds,
    processCpuMs: run.cpuMs,
    windowed,
    threads,
    process: {
      profile: summaries.length > 0 ? combineSummaries(summaries) : null,
      counters: sumCounters([...counted.values()]),
    },
    executedRedis: run.redis,
    unanswered: after.unanswered,
    kept,
  });
}
