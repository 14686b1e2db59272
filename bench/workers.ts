// Two worker processes against one, on each backend: the same closed-loop chat load as the
// throughput benchmark, sent to an ingress-only `switchboard serve --no-workers` process whose
// turns run in one, then two, `switchboard worker` processes (same store, same Redis prefix).
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { BACKEND_NAMES, BACKENDS, type Backend } from "./lib/backends.js";
import { gatewayEnv, startGatewayProcess, type GatewayProcess } from "./lib/gateway-process.js";
import { postgresEnv } from "./lib/postgres.js";
import { benchPrefix } from "./lib/redis.js";
import type { BenchContext, BenchResult, Figure, LatencySeries } from "./lib/result.js";
import { round } from "./lib/stats.js";
import { CONCURRENCY, driveChatLoad, shapeFor, type ChatLoad, type Shape } from "./throughput.js";

async function measureWorkers(ctx: BenchContext, shape: Shape, backend: Backend, workers: number): Promise<ChatLoad> {
  const label = `${backend}-${workers}w`;
  const dir = join(ctx.workDir, `workers-${label}`);
  mkdirSync(dir, { recursive: true });
  const storeEnv = backend === "pg" ? postgresEnv(await ctx.postgres(), `workers_${label}`) : {};
  const env = gatewayEnv(dir, ctx.redisUrl, benchPrefix(`workers-${label}`), { WORKER_CONCURRENCY: String(CONCURRENCY), ...storeEnv });
  const processes: GatewayProcess[] = [];
  try {
    const ingress = await startGatewayProcess(["serve", "--no-workers"], env);
    processes.push(ingress);
    for (let i = 0; i < workers; i++) processes.push(await startGatewayProcess(["worker"], env));
    return await driveChatLoad(ctx, ingress.url as string, shape, `${BACKEND_NAMES[backend]}, ${workers} worker process${workers > 1 ? "es" : ""}`);
  } finally {
    await Promise.all(processes.map((p) => p.stop()));
  }
}

export async function workersBenchmark(ctx: BenchContext): Promise<BenchResult> {
  const shape = shapeFor(ctx);
  const figures: Figure[] = [];
  const series: LatencySeries[] = [];
  const notes = [
    `${shape.sessions} sessions x ${shape.messages} messages, closed loop (as the throughput benchmark), through one \`switchboard serve --no-workers\` process; ` +
      `turns run in one, then two, \`switchboard worker\` processes (WORKER_CONCURRENCY ${CONCURRENCY} each) on the same store: one SQLite file, or one PostgreSQL schema per measurement.`,
    "Every process shares this machine's cores with Redis, PostgreSQL and the load generator: a second worker adds capacity only where the first left CPU idle.",
  ];
  let errors = 0;
  for (const backend of BACKENDS) {
    const suffix = backend === "sqlite" ? "sqlite" : "pg";
    const name = BACKEND_NAMES[backend];
    try {
      const one = await measureWorkers(ctx, shape, backend, 1);
      const two = await measureWorkers(ctx, shape, backend, 2);
      errors += one.errors.length + two.errors.length;
      for (const failed of [one, two]) if (failed.errors.length) notes.push(`${name}: ${failed.errors.length} request(s) failed, e.g. ${failed.errors.find(Boolean) ?? ""}`);
      figures.push(
        { key: `one_worker_msgs_per_s_${suffix}`, label: `${name}: messages/s, one worker process`, value: round(one.messagesPerSecond, 1), unit: "msg/s" },
        { key: `two_workers_msgs_per_s_${suffix}`, label: `${name}: messages/s, two worker processes`, value: round(two.messagesPerSecond, 1), unit: "msg/s" },
        { key: `two_workers_ratio_${suffix}`, label: `${name}: ratio two workers / one`, value: round(two.messagesPerSecond / one.messagesPerSecond, 3), unit: "", ...(backend === "pg" ? { target: { op: ">=" as const, value: 1 } } : {}) },
      );
      series.push(
        { name: `API request, ${name}, one worker process`, samplesMs: one.latenciesMs },
        { name: `API request, ${name}, two worker processes`, samplesMs: two.latenciesMs },
      );
    } catch (err) {
      notes.push(`${name}: did not complete: ${(err as Error).message}`);
      figures.push({ key: `two_workers_ratio_${suffix}`, label: `${name}: ratio two workers / one`, value: NaN, unit: "", target: { op: ">=", value: 0 } });
    }
  }
  figures.push({ key: "workers_errors", label: "failed requests", value: errors, unit: "", target: { op: "<=", value: 0 } });
  return { name: "workers", title: "Two worker processes against one (SQLite, PostgreSQL)", figures, notes, series };
}
