// npm run bench [-- --quick] [-- --only=throughput,reload] [-- --no-progress] [-- --profile]
// Runs every benchmark against one Redis (REDIS_URL, or a private redis-server started for the
// run), prints a table per benchmark, and writes bench/results/latest.json and latencies.svg.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { redisOptionsFromUrl } from "../src/bus/redis-url.js";
import { buildDist, typescriptCompiler } from "../bin/ensure-built.js";
import { fanoutBenchmark } from "./fanout.js";
import { handoffBenchmark } from "./handoff.js";
import { ingressBenchmark } from "./ingress.js";
import { llmBenchmark } from "./llm.js";
import { mechanismsBenchmark } from "./mechanisms.js";
import { renderLatencySvg } from "./lib/chart.js";
import { benchPostgres, type BenchPostgres } from "./lib/postgres.js";
import { benchRedis, dropBenchKeys } from "./lib/redis.js";
import { passes, type BenchContext, type BenchResult, type Benchmark } from "./lib/result.js";
import { renderMarkdown, renderTable } from "./lib/table.js";
import { reloadBenchmark } from "./reload.js";
import { slackBenchmark } from "./slack.js";
import { throughputBenchmark } from "./throughput.js";
import { workersBenchmark } from "./workers.js";

const BENCHMARKS: Record<string, Benchmark> = {
  throughput: throughputBenchmark,
  handoff: handoffBenchmark,
  ingress: ingressBenchmark,
  fanout: fanoutBenchmark,
  reload: reloadBenchmark,
  slack: slackBenchmark,
  workers: workersBenchmark,
  llm: llmBenchmark,
  mechanisms: mechanismsBenchmark,
};

const RESULTS_DIR = join(import.meta.dirname, "results");

interface Args {
  quick: boolean;
  progress: boolean;
  profile: boolean;
  only: string[];
}

function parseArgs(argv: string[]): Args {
  const args: Args = { quick: false, progress: true, profile: false, only: Object.keys(BENCHMARKS) };
  for (const arg of argv) {
    if (arg === "--quick") args.quick = true;
    else if (arg === "--no-progress") args.progress = false;
    else if (arg === "--profile") args.profile = true;
    else if (arg.startsWith("--only=")) args.only = arg.slice("--only=".length).split(",").filter(Boolean);
    else if (arg === "--help" || arg === "-h") {
      console.log(`usage: npm run bench [-- --quick] [--only=${Object.keys(BENCHMARKS).join(",")}] [--no-progress] [--profile]`);
      process.exit(0);
    } else throw new Error(`unknown option ${arg}`);
  }
  const unknown = args.only.filter((name) => !Object.hasOwn(BENCHMARKS, name));
  if (unknown.length) throw new Error(`unknown benchmark(s): ${unknown.join(", ")}`);
  return args;
}

async function redisVersion(url: string): Promise<string> {
  const client = new Redis({ ...redisOptionsFromUrl(url), lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await client.connect();
    const info = await client.info("server");
    return /redis_version:(\S+)/.exec(info)?.[1] ?? "unknown";
  } finally {
    client.disconnect();
  }
}

/** A benchmark that crashed still shows up, with its error, so a run never hides a failure. */
function crashed(name: string, err: unknown): BenchResult {
  return {
    name,
    title: `${name}: did not complete`,
    figures: [],
    notes: [`error: ${(err as Error)?.stack ?? String(err)}`],
    series: [],
  };
}

async function main(): Promise<number> {
  const args = parseArgs(process.argv.slice(2));
  // The gateway runs as `npm start` runs it, from dist/: brought up to date once, here, rather
  // than inside the first server start the benchmarks time out.
  const tsc = typescriptCompiler();
  if (!tsc || !buildDist(tsc)) {
    console.error("bench: compiling src/ into dist/ failed (TypeScript is a dev dependency: npm install)");
    return 1;
  }
  const redis = await benchRedis();
  const workDir = mkdtempSync(join(tmpdir(), "switchboard-bench-"));
  const measured: Record<string, number> = {};
  // Started on first use only: a run of SQLite-only benchmarks never needs a server.
  const pgServer: { started: Promise<BenchPostgres> | null } = { started: null };
  const ctx: BenchContext = {
    redisUrl: redis.url,
    redisPrivate: redis.private,
    quick: args.quick,
    progress: args.progress,
    profile: args.profile,
    workDir,
    measured,
    postgres: () => (pgServer.started ??= benchPostgres()),
  };
  const results: BenchResult[] = [];
  const started = Date.now();
  // Other work on the machine skews every figure: the load is recorded with the results.
  const loadBefore = loadavg()[0];
  let version: string;
  let postgresVersion: string | null = null;
  try {
    version = await redisVersion(redis.url);
    console.log(
      `switchboard bench${args.quick ? " (quick)" : ""}: ${cpus().length} CPU(s) ${cpus()[0]?.model ?? ""}, node ${process.version}, ` +
        `redis ${version} (${redis.private ? "private server" : "REDIS_URL"}), load average ${loadBefore.toFixed(2)}`,
    );
    for (const name of args.only) {
      process.stderr.write(`\n> ${name}\n`);
      let result: BenchResult;
      try {
        result = await BENCHMARKS[name](ctx);
      } catch (err) {
        result = crashed(name, err);
      }
      results.push(result);
      for (const f of result.figures) measured[f.key] = f.value;
      console.log(renderTable(result));
    }
  } finally {
    // The run's schemas are dropped; a private server is stopped.
    if (pgServer.started) {
      await pgServer.started.then(
        async (server) => {
          postgresVersion = server.description;
          await server.stop();
        },
        () => undefined,
      ).catch((err: Error) => console.error(`could not drop the run's PostgreSQL schemas: ${err.message}`));
    }
    // A shared Redis (REDIS_URL) keeps nothing of the run; a private one goes away anyway.
    if (!redis.private) await dropBenchKeys(redis.url).catch((err: Error) => console.error(`could not delete the run's keys: ${err.message}`));
    await redis.stop();
    rmSync(workDir, { recursive: true, force: true });
  }

  const figures: Record<string, number> = {};
  const targets: Record<string, { op: string; value: number; pass: boolean | null }> = {};
  for (const result of results) {
    for (const f of result.figures) {
      figures[f.key] = f.value;
      if (f.target) targets[f.key] = { ...f.target, pass: passes(f) };
    }
  }
  const report = {
    ...figures,
    generated_at: new Date().toISOString(),
    quick: args.quick,
    duration_s: Math.round((Date.now() - started) / 1000),
    machine: {
      cpus: cpus().length,
      cpu_model: cpus()[0]?.model ?? "unknown",
      memory_gb: Math.round(totalmem() / 2 ** 30),
      node: process.version,
      platform: process.platform,
      redis: version,
      ...(postgresVersion ? { postgres: postgresVersion } : {}),
      load_avg_1m_before: Number(loadBefore.toFixed(2)),
      load_avg_1m_after: Number(loadavg()[0].toFixed(2)),
    },
    targets,
    benchmarks: results.map((r) => ({ name: r.name, title: r.title, completed: r.figures.length > 0, figures: r.figures, notes: r.notes })),
  };
  mkdirSync(RESULTS_DIR, { recursive: true });
  writeFileSync(join(RESULTS_DIR, "latest.json"), `${JSON.stringify(report, null, 2)}\n`);
  const series = results.flatMap((r) => r.series);
  writeFileSync(join(RESULTS_DIR, "latencies.svg"), renderLatencySvg(series, `switchboard latency distributions${args.quick ? " (quick run)" : ""} — ${report.generated_at}`));
  writeFileSync(join(RESULTS_DIR, "latest.md"), `${renderMarkdown(results)}\n`);
  const failed = Object.entries(targets).filter(([, t]) => t.pass === false).map(([k]) => k);
  const incomplete = results.filter((r) => r.figures.length === 0).map((r) => r.name);
  console.log(`\nwrote bench/results/latest.json, latencies.svg and latest.md in ${report.duration_s}s`);
  if (incomplete.length) console.log(`did not complete: ${incomplete.join(", ")}`);
  console.log(failed.length ? `targets missed: ${failed.join(", ")}` : incomplete.length ? "every measured target met" : "every target met");
  return incomplete.length ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err: Error) => {
    console.error(err);
    process.exit(1);
  },
);
