// `npm run bench -- --only=slack --profile`: one more Switchboard round, closed loop only, with
// the server under `node --cpu-prof` and the counting preload (instrument-preload.ts). Its
// figures are not the benchmark's (the profiler and the counting cost time); it answers where the
// time goes and how many SQLite transactions and Redis commands one message costs. The profile
// is summarised over the closed-loop window alone (start-up and warm-up left out) and kept as
// bench/results/slack-switchboard.cpuprofile.
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";
import { summarizeCpuProfile, type SelfTime } from "./cpu-profile.js";
import type { FakeSlackApi } from "./fake-slack-api.js";
import type { ProcessCounters } from "./instrument-preload.js";
import { Progress } from "./progress.js";
import { describePerMessage, diffCounts, totalCount, type CommandStatsReader } from "./redis-commands.js";
import type { BenchContext } from "./result.js";
import { closedLoop, warmUp, type SlackDriver, type SlackShape } from "./slack-load.js";
import { startSwitchboard } from "./slack-systems.js";

const RESULTS_DIR = join(import.meta.dirname, "..", "results");
const PRELOAD = pathToFileURL(join(import.meta.dirname, "instrument-preload.mjs")).href;

/** Asks the process for its counters (SIGUSR2) and waits for the file it writes. */
async function readCounters(pid: number, file: string, previousSeq: number): Promise<ProcessCounters> {
  process.kill(pid, "SIGUSR2");
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (existsSync(file)) {
      try {
        const counters = JSON.parse(readFileSync(file, "utf8")) as ProcessCounters;
        if (counters.seq > previousSeq) return counters;
      } catch {
        // Caught mid-write: read again.
      }
    }
    await sleep(20);
  }
  throw new Error("the profiled server did not write its counters");
}

/** The main thread's profile: node names them CPU.<date>.<pid>.<thread>.<seq>.cpuprofile, thread 0 first. */
function mainThreadProfile(dir: string, pid: number): string | null {
  const files = existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith(".cpuprofile") && f.includes(`.${pid}.0.`)) : [];
  if (files.length === 0) return null;
  return join(dir, files.sort((a, b) => statSync(join(dir, b)).size - statSync(join(dir, a)).size)[0]);
}

/** `"sql" n.nn`, most frequent first (SQL holds commas, so entries are quoted). */
function describeCounts(counts: Record<string, number>, messages: number): string {
  return Object.entries(counts)
    .sort((a, b) => b[1] - a[1])
    .filter(([, n]) => n / messages >= 0.05)
    .map(([sql, n]) => `\`${sql}\` ${(n / messages).toFixed(2)}`)
    .join("; ");
}

function table(rows: SelfTime[], heading: string, count: number): string[] {
  return [
    `| ${heading} | self time | share |`,
    "|---|---|---|",
    ...rows.slice(0, count).map((r) => `| ${r.name.replace(/\|/g, "\\|")} | ${r.ms.toFixed(0)} ms | ${(r.share * 100).toFixed(1)}% |`),
  ];
}

export async function profileSwitchboard(
  ctx: BenchContext,
  shape: SlackShape,
  env: { redisUrl: string; fake: FakeSlackApi; stats: CommandStatsReader; driver: SlackDriver },
): Promise<string> {
  const dir = join(ctx.workDir, "slack-profile");
  const profileDir = join(dir, "cpu");
  const countersFile = join(dir, "counters.json");
  mkdirSync(profileDir, { recursive: true });
  const system = await startSwitchboard({
    redisUrl: env.redisUrl,
    slackApiUrl: env.fake.url,
    dir,
    // The gateway runs compiled, as in the rounds; the preload brings tsx for itself.
    nodeArgs: ["--cpu-prof", "--cpu-prof-dir", profileDir, "--import", PRELOAD],
    env: { BENCH_COUNTERS_FILE: countersFile },
  });
  const messages = shape.conversations * shape.messages;
  let run: Awaited<ReturnType<typeof closedLoop>>;
  let before: ProcessCounters;
  let after: ProcessCounters;
  let fromUs: number;
  let toUs: number;
  try {
    await warmUp(env.driver, system);
    before = await readCounters(system.pid, countersFile, 0);
    const progress = new Progress("Switchboard, profiled: closed loop", messages, ctx.progress);
    // V8 stamps samples with the monotonic clock process.hrtime reads.
    fromUs = Number(process.hrtime.bigint() / 1000n);
    run = await closedLoop(env.driver, system, env.fake, env.stats, shape.conversations, shape.messages, progress);
    toUs = Number(process.hrtime.bigint() / 1000n);
    progress.finish();
    after = await readCounters(system.pid, countersFile, before.seq);
  } finally {
    // The profile is written when the process exits.
    await system.stop();
  }

  const file = mainThreadProfile(profileDir, system.pid);
  const lines: string[] = ["#### Where Switchboard's time goes (profiled round)", ""];
  const sqlite = {
    transactions: after.sqlite.transactions - before.sqlite.transactions,
    autocommitWrites: after.sqlite.autocommitWrites - before.sqlite.autocommitWrites,
    autocommitReads: after.sqlite.autocommitReads - before.sqlite.autocommitReads,
    statements: after.sqlite.statements - before.sqlite.statements,
  };
  const autocommitSql = diffCounts(before.sqlite.autocommitSql, after.sqlite.autocommitSql);
  const perMsg = (n: number): string => (n / messages).toFixed(2);
  const sent = diffCounts(before.redis, after.redis);
  lines.push(
    `Closed loop, ${shape.conversations} conversations x ${shape.messages} messages under \`node --cpu-prof\` and the counting preload ` +
      `(${(messages / run.seconds).toFixed(0)} msg/s while profiled). Per message:`,
    "",
    `- SQLite: ${perMsg(sqlite.transactions + sqlite.autocommitWrites)} commits (${perMsg(sqlite.transactions)} BEGIN...COMMIT transactions + ` +
      `${perMsg(sqlite.autocommitWrites)} single-statement writes), ${perMsg(sqlite.autocommitReads)} single-statement reads, ${perMsg(sqlite.statements)} statements in all;`,
    `- single statements outside a transaction, per message: ${describeCounts(autocommitSql, messages)};`,
    `- Redis, sent by the process: ${perMsg(totalCount(sent))} commands — ${describePerMessage(sent, messages)};`,
    `- Redis, executed by the server (INFO commandstats, scripts' own commands included): ${perMsg(totalCount(run.redis))} — ${describePerMessage(run.redis, messages)}.`,
    "",
  );
  if (!file) {
    lines.push("No CPU profile was written (the server did not exit cleanly).");
    return lines.join("\n");
  }
  mkdirSync(RESULTS_DIR, { recursive: true });
  copyFileSync(file, join(RESULTS_DIR, "slack-switchboard.cpuprofile"));
  let summary = summarizeCpuProfile(file, { fromUs, toUs });
  let scope = "the closed-loop window";
  if (summary.samples === 0) {
    // Clocks that do not line up: fall back to the whole profile rather than show nothing.
    summary = summarizeCpuProfile(file);
    scope = "the whole process lifetime (the window could not be located in the profile)";
  }
  lines.push(
    `CPU profile of the server's main thread over ${scope}: ${(summary.busyMs / 1000).toFixed(1)} s busy of ${(summary.windowMs / 1000).toFixed(1)} s ` +
      `(${(summary.busyMs / messages).toFixed(2)} ms per message). Self time by module:`,
    "",
    ...table(summary.modules, "module", 15),
    "",
    "Self time by function:",
    "",
    ...table(summary.functions, "function", 20),
  );
  return lines.join("\n");
}
