// GET /health (Redis and database state) and GET /metrics (Prometheus text).
import { Router } from "express";
import { AggregatorRegistry } from "prom-client";
import type { Redis } from "ioredis";
import type { SessionStore } from "../state/types.js";
import type { GatewayMetrics } from "../gateway/metrics.js";
import type { McpServerStatus } from "../agent/tools/mcp/index.js";
import { withTimeout, type GatewayQueues } from "../gateway/queues.js";

export interface HealthDeps {
  store: SessionStore;
  redis: Redis;
  queues: GatewayQueues;
  metrics: GatewayMetrics;
  workersEnabled: boolean;
  /** Metrics of another registry of this process (`getMetricsAsJSON()`: the workers thread's), summed with ours. */
  moreMetrics?: () => Promise<object[]>;
  /** When the workers run in a thread of this process: its state (running, restarts, thread id). */
  workersThread?: () => object;
  version: string;
  /** MCP tool servers of this process (null when it runs no workers, so no tools). */
  mcp: (() => Record<string, McpServerStatus>) | null;
}

async function check(fn: () => Promise<unknown>): Promise<"ok" | "down"> {
  try {
    await withTimeout(fn(), 1000, "health check");
    return "ok";
  } catch {
    return "down";
  }
}

export function healthRouter(deps: HealthDeps): Router {
  const router = Router();
  router.get("/health", async (_req, res) => {
    const [redis, db] = await Promise.all([check(() => deps.redis.ping()), check(() => deps.store.inboxCounts())]);
    const inbox = db === "ok" ? await deps.store.inboxCounts() : null;
    const ok = redis === "ok" && db === "ok";
    res.status(ok ? 200 : 503).json({
      status: ok ? "ok" : "degraded",
      redis,
      db,
      workers: deps.workersEnabled,
      ...(deps.workersThread ? { workers_thread: deps.workersThread() } : {}),
      inbox,
      // Informational: a failed tool server does not make the gateway unhealthy.
      ...(deps.mcp ? { mcp: deps.mcp() } : {}),
      version: deps.version,
    });
  });
  router.get("/metrics", async (_req, res) => {
    try {
      const [turns, deliveries] = await Promise.all([
        withTimeout(deps.queues.turns.getJobCounts("waiting", "active", "delayed", "failed", "prioritized"), 1000, "queue counts"),
        withTimeout(deps.queues.deliveries.getJobCounts("waiting", "active", "delayed", "failed", "prioritized"), 1000, "queue counts"),
      ]);
      for (const [queue, counts] of [["turns", turns], ["deliveries", deliveries]] as const) {
        for (const [state, n] of Object.entries(counts)) deps.metrics.queueDepth.set({ queue, state }, n);
      }
    } catch {
      // Redis down: the gauges keep their last values; /health says why.
    }
    res.setHeader("Content-Type", deps.metrics.registry.contentType);
    if (!deps.moreMetrics) {
      res.send(await deps.metrics.registry.metrics());
      return;
    }
    const [ours, more] = await Promise.all([deps.metrics.registry.getMetricsAsJSON(), deps.moreMetrics()]);
    res.send(await AggregatorRegistry.aggregate(more.length ? [ours, more] : [ours]).metrics());
  });
  return router;
}
