// The Slack benchmark's profiled round covers every thread of the server process: the counting
// preload counts in each thread and the main thread serves all the counts; node --cpu-prof writes
// a profile per thread, summarised per thread and summed; the report names each table's thread.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { createRequire } from "node:module";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { combineSummaries, summarizeCpuProfile, threadProfiles, type ProfileSummary } from "../../bench/lib/cpu-profile.js";
import { emptyCounters, sumCounters, windowByThread, type Counters } from "../../bench/lib/process-counters.js";
import { renderProfileReport, threadRole } from "../../bench/lib/slack-profile-report.js";
import { readProcessCounters } from "../../bench/lib/thread-counters.js";
import { makeTempDir } from "../support/tmp.js";

const require = createRequire(import.meta.url);
const PRELOAD = join(import.meta.dirname, "..", "..", "bench", "lib", "instrument-preload.ts");
const SQLITE = JSON.stringify(require.resolve("better-sqlite3"));

// The main thread reads once; a worker thread runs two transactions and a statement of its own.
const TWO_THREADS = `
const { Worker } = require("node:worker_threads");
const Database = require(${SQLITE});
new Database(":memory:").prepare("SELECT 1").get();
const worker = new Worker(\`
  const Database = require(${SQLITE.replace(/"/g, '\\"')});
  const db = new Database(":memory:");
  db.prepare("CREATE TABLE t (x)").run();
  const insert = db.transaction(() => db.prepare("INSERT INTO t VALUES (1)").run());
  insert();
  insert();
  require("node:worker_threads").parentPort.postMessage("done");
  setInterval(() => {}, 1000);
\`, { eval: true });
worker.on("message", () => console.log("ready"));
`;

const counters = (c: Partial<Counters["sqlite"]>, redis: Record<string, number> = {}): Counters => ({
  sqlite: { ...emptyCounters().sqlite, ...c },
  redis,
});

const summary = (busyMs: number, modules: [string, number][], scripts: string[] = []): ProfileSummary => ({
  busyMs,
  windowMs: 1000,
  samples: 1000,
  modules: modules.map(([name, ms]) => ({ name, ms, share: ms / busyMs })),
  functions: modules.map(([name, ms]) => ({ name: `f (${name})`, ms, share: ms / busyMs })),
  scripts: new Set(scripts),
});

describe("the profiled Slack round", () => {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const cleanup of cleanups.splice(0)) cleanup();
  });

  it("counts SQLite statements in every thread, the main thread serving them all", async () => {
    const temp = makeTempDir("sb-counters");
    cleanups.push(temp.cleanup);
    const socket = join(temp.dir, "counters.sock");
    const child = spawn(process.execPath, ["--require", require.resolve("tsx/cjs"), "--require", PRELOAD, "-e", TWO_THREADS], {
      env: { ...process.env, BENCH_COUNTERS_SOCKET: socket },
      stdio: ["ignore", "pipe", "inherit"],
    });
    cleanups.push(() => child.kill("SIGKILL"));
    await new Promise<void>((resolve) => child.stdout.on("data", (chunk: Buffer) => chunk.toString().includes("ready") && resolve()));

    const read = await readProcessCounters(socket);
    expect(read.unanswered).toEqual([]);
    const main = read.threads.find((t) => t.threadId === 0);
    const worker = read.threads.find((t) => t.threadId !== 0 && t.counters.sqlite.statements > 0);
    expect(main?.counters.sqlite).toMatchObject({ autocommitReads: 1, statements: 1, transactions: 0 });
    expect(worker?.counters.sqlite).toMatchObject({ transactions: 2, autocommitWrites: 1, statements: 3 });
    // Every statement by its SQL, inside a transaction or not.
    expect(worker?.counters.sqlite.statementSql).toEqual({ "CREATE TABLE t (x)": 1, "INSERT INTO t VALUES (1)": 2 });
    expect(sumCounters(read.threads.map((t) => t.counters)).sqlite.statements).toBe(4);
  });

  it("windows each thread's counts on its own; a thread started within the window counts from zero", () => {
    const before = { threads: [{ threadId: 0, counters: counters({ statements: 5 }, { publish: 2 }) }], unanswered: [] };
    const after = {
      threads: [
        { threadId: 0, counters: counters({ statements: 8 }, { publish: 3 }) },
        { threadId: 3, counters: counters({ statements: 4 }, { publish: 1 }) },
      ],
      unanswered: [],
    };
    const window = windowByThread(before, after);
    expect(window.map((t) => [t.threadId, t.counters.sqlite.statements, t.counters.redis.publish])).toEqual([
      [0, 3, 1],
      [3, 4, 1],
    ]);
    expect(sumCounters(window.map((t) => t.counters)).redis).toEqual({ publish: 2 });
  });

  it("finds one CPU profile per thread and sums their self times", async () => {
    const temp = makeTempDir("sb-cpuprof");
    cleanups.push(temp.cleanup);
    const burn = "const end = Date.now() + 300; while (Date.now() < end);";
    const script = `const { Worker } = require("node:worker_threads"); new Worker(${JSON.stringify(burn)}, { eval: true });`;
    const child = spawn(process.execPath, ["--cpu-prof", "--cpu-prof-dir", temp.dir, "-e", script], { stdio: "ignore" });
    await once(child, "exit");

    const profiles = threadProfiles(temp.dir, child.pid as number);
    expect(profiles.map((p) => p.threadId)).toEqual([0, 1]);
    const summaries = profiles.map((p) => summarizeCpuProfile(p.file));
    expect(summaries[1].busyMs).toBeGreaterThan(150);
    const whole = combineSummaries(summaries);
    expect(whole.busyMs).toBeCloseTo(summaries[0].busyMs + summaries[1].busyMs, 6);
    expect(whole.modules.reduce((sum, m) => sum + m.share, 0)).toBeCloseTo(1, 6);
    expect(threadRole(1, summaries[1].scripts, [])).toBe("other");
  });

  it("names the thread of every table in its report", () => {
    const main = summary(300, [["router", 200], ["ioredis", 100]]);
    const workers = summary(600, [["SQLite (better-sqlite3 statements, native)", 500], ["ioredis", 100]], ["file:///repo/src/main/workers-thread.ts"]);
    const mainCounts = counters({ transactions: 100, statements: 200 }, { "evalsha addStandardJob": 100 });
    const workerCounts = counters({ transactions: 300, autocommitWrites: 200, statements: 2000 }, { publish: 100 });
    const markdown = renderProfileReport({
      conversations: 10,
      messagesPerConversation: 10,
      msgsPerS: 50,
      processCpuMs: 1000,
      windowed: true,
      threads: [
        { threadId: 0, role: threadRole(0, main.scripts, []), profile: main, counters: mainCounts },
        { threadId: 2, role: threadRole(2, workers.scripts, []), profile: workers, counters: workerCounts },
      ],
      process: { profile: combineSummaries([main, workers]), counters: sumCounters([mainCounts, workerCounts]) },
      executedRedis: { xadd: 800 },
      unanswered: [],
      kept: ["slack-switchboard.cpuprofile", "slack-switchboard-workers.cpuprofile"],
    });
    for (const heading of ["module (all threads)", "module (main thread)", "module (workers thread)", "function (workers thread)"]) {
      expect(markdown).toContain(`| ${heading} | self time | share |`);
    }
    // 100 messages: main 3 ms, workers 6 ms, the process 9 ms per message.
    expect(markdown).toContain("| main thread (HTTP ingress: Slack events and their acks) | 0.3 s of 1.0 s (30%) | 3.00 ms | 1.00 | 2.00 | 1.00 |");
    expect(markdown).toContain("| workers thread (thread 2: turn and delivery workers) | 0.6 s of 1.0 s (60%) | 6.00 ms | 5.00 | 20.00 | 1.00 |");
    expect(markdown).toContain("| whole process | 0.9 s (the threads' sum) | 9.00 ms | 6.00 | 22.00 | 2.00 |");
    expect(markdown).toContain("| ioredis | 200 ms | 22.2% |");
  });
});
