// The workers thread of `switchboard serve`: turn and delivery workers (and the platform
// connections, reconciler and turn recovery that go with them) on an event loop of their own, so
// the HTTP ingress on the main thread never waits behind a turn. The same wiring as
// `switchboard worker`, in a thread instead of a process.
import { parentPort, threadId, workerData } from "node:worker_threads";
import { createLogger } from "../gateway/logger.js";
import { loadConfig } from "./config.js";
import { PROCESS_METRICS_PREFIX } from "../gateway/metrics.js";
import type { TurnOutcome } from "../gateway/types.js";
import { announceQueued } from "../gateway/queued-notices.js";
import { startGateway } from "./server.js";
import { setGivesWay } from "../state/write-gate.js";
import { MCP_STATUS_INTERVAL_MS, type FromWorkersThread, type ToWorkersThread, type WorkersThreadData } from "./workers-thread-protocol.js";

const port = parentPort;
if (!port) throw new Error("workers-thread.ts runs as a worker thread of switchboard serve");
const { redisUrl } = workerData as WorkersThreadData;
const post = (message: FromWorkersThread): void => port.postMessage(message);

const config = loadConfig(process.env, { redisUrl });
// Its writes never ask for the gate to be handed to them: the HTTP thread's inserts do (write-gate.ts).
setGivesWay(true);
const logger = createLogger(config.logLevel).child({ workers: "thread", threadId });
// The outcomes of one pass of the event loop go to the main thread's waiting requests in one message.
let outcomes: TurnOutcome[] = [];
const reportOutcomes = (answered: TurnOutcome[]): void => {
  if (answered.length === 0) return;
  if (outcomes.length === 0) setImmediate(() => {
    post({ type: "outcomes", outcomes });
    outcomes = [];
  });
  outcomes.push(...answered);
};
const gateway = await startGateway(config, {
  http: false,
  workers: true,
  logger,
  backgroundCheckpoints: false,
  inProcessWakeUps: true,
  onTurnOutcomes: reportOutcomes,
});
port.on("message", (message: ToWorkersThread) => {
  if (message.type === "wake") {
    // Those without a free slot (all, while closing) go to the queue, which every worker process
    // takes from (with Redis down, the reconciler finds the rows).
    const spilled = gateway.wakeUps?.offer(message.wakeUps, message.notices) ?? null;
    const rest = spilled ? spilled.rest : message.wakeUps;
    if (rest.length > 0) {
      const announced = spilled ? spilled.announced : announceQueued(gateway.events, message.notices);
      void announced.then(() => gateway.ingress.enqueueMany(rest)).catch(() => undefined);
    }
    return;
  }
  if (message.type === "metrics") {
    // The process's own figures (CPU, memory, handles) are the main thread's to report.
    void gateway.metrics.registry.getMetricsAsJSON().then((metrics) =>
      post({ type: "metrics", id: message.id, metrics: metrics.filter((m) => !m.name.startsWith(PROCESS_METRICS_PREFIX)) }),
    );
    return;
  }
  gateway.stop().then(
    () => process.exit(0),
    (err: Error) => {
      logger.error({ err: err.message }, "workers shutdown failed");
      process.exit(1);
    },
  );
});
logger.info("workers running in their own thread");
post({ type: "ready", announcer: gateway.wakeUps?.announcer ?? null });
// /health on the main thread reads the last of these (it answers without asking the thread).
const postMcpStatus = (): void => {
  const status = gateway.mcpStatus();
  if (status) post({ type: "mcp", status });
};
postMcpStatus();
setInterval(postMcpStatus, MCP_STATUS_INTERVAL_MS).unref();
