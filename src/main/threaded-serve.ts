// `switchboard serve` in its default layout: HTTP + WebSocket ingress on the main thread, the
// workers in a thread of their own (workers-thread.ts), one process. One start, one stop.
import type { Logger } from "pino";
import type { GatewayConfig } from "./config.js";
import { startGateway, type GatewayHandle } from "./server.js";
import { WorkersThreadSupervisor } from "./workers-thread-supervisor.js";

/** Time the workers thread gets beyond SHUTDOWN_TIMEOUT_MS to interrupt turns and close before it is terminated. */
const THREAD_STOP_GRACE_MS = 5_000;
/** How long /metrics waits for the workers thread's figures before answering without them. */
const WORKERS_METRICS_TIMEOUT_MS = 1_000;

export interface ThreadedGateway {
  gateway: GatewayHandle;
  workers: WorkersThreadSupervisor;
  stop(): Promise<void>;
}

export async function startThreadedGateway(config: GatewayConfig, logger: Logger): Promise<ThreadedGateway> {
  let workers: WorkersThreadSupervisor | null = null;
  const gateway = await startGateway(config, {
    http: true,
    workers: false,
    logger,
    workersThread: () => workers?.status() ?? { running: false, thread_id: null, restarts: 0 },
    workersMetrics: () => workers?.metrics(WORKERS_METRICS_TIMEOUT_MS) ?? Promise.resolve([]),
    // The thread runs the MCP servers (tools run in turns); /health shows them as it last reported.
    ...(Object.keys(config.mcpServers).length > 0 ? { workersMcp: () => workers?.mcpStatus() ?? {} } : {}),
  });
  const supervisor = new WorkersThreadSupervisor({
    redisUrl: gateway.redisUrl,
    store: gateway.store,
    queues: gateway.queues,
    logger,
    onOutcomes: (outcomes) => gateway.ingress.settleOutcomes(outcomes),
  });
  workers = supervisor;
  try {
    await supervisor.start();
  } catch (err) {
    await gateway.stop();
    throw err;
  }
  // Messages the main thread accepts wake their turns in the thread without a job each.
  gateway.ingress.useWakeUps(supervisor);
  return {
    gateway,
    workers: supervisor,
    async stop() {
      // The workers first: their turns finish (or are interrupted) and release their leases while
      // Redis and the store (and the private redis-server) are still there.
      await supervisor.stop(config.shutdownTimeoutMs + THREAD_STOP_GRACE_MS);
      await gateway.stop();
    },
  };
}
