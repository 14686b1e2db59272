// Prometheus metrics (prom-client), one registry per gateway process.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import { registerSqliteWaitMetrics } from "./sqlite-wait-metrics.js";

/** Seconds, for the parts of an ack (sub-millisecond to a stalled write). */
const ACK_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

export interface GatewayMetrics {
  registry: Registry;
  inbound: Counter<"platform" | "result">;
  acceptSeconds: Histogram<"platform">;
  ackSeconds: Histogram<"route">;
  turns: Counter<"platform" | "outcome">;
  turnSeconds: Histogram<"platform">;
  leaseWaits: Counter;
  leaseWaitSeconds: Histogram;
  staleLeasesReaped: Counter<"reason">;
  deliveries: Counter<"platform" | "result">;
  queueDepth: Gauge<"queue" | "state">;
  runningTurns: Gauge;
  outcomeWaits: Counter<"source">;
}

/** The prefix of the process's default metrics (CPU, memory, event loop, handles). */
export const PROCESS_METRICS_PREFIX = "switchboard_process_";

export function createMetrics(): GatewayMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: PROCESS_METRICS_PREFIX });
  registerSqliteWaitMetrics(registry);
  return {
    registry,
    inbound: new Counter({ name: "switchboard_inbound_messages_total", help: "Inbound messages by result (accepted, duplicate, rejected)", labelNames: ["platform", "result"], registers: [registry] }),
    acceptSeconds: new Histogram({
      name: "switchboard_ingress_accept_seconds",
      help: "Time to record and enqueue an accepted message: the durable part of a platform's ack",
      labelNames: ["platform"],
      buckets: ACK_BUCKETS,
      registers: [registry],
    }),
    ackSeconds: new Histogram({
      name: "switchboard_http_ack_seconds",
      help: "Time from a platform POST's headers (Slack events, a webhook route) to its answer written: the server's part of an ack",
      labelNames: ["route"],
      buckets: ACK_BUCKETS,
      registers: [registry],
    }),
    turns: new Counter({ name: "switchboard_turns_total", help: "Agent turns by outcome", labelNames: ["platform", "outcome"], registers: [registry] }),
    turnSeconds: new Histogram({ name: "switchboard_turn_duration_seconds", help: "Turn latency from admission to completion", labelNames: ["platform"], buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120], registers: [registry] }),
    leaseWaits: new Counter({ name: "switchboard_lease_waits_total", help: "Turns that had to wait for another holder of the session lease", registers: [registry] }),
    leaseWaitSeconds: new Histogram({ name: "switchboard_lease_wait_seconds", help: "Time from the first failed lease attempt to admission", buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120], registers: [registry] }),
    staleLeasesReaped: new Counter({ name: "switchboard_stale_leases_reaped_total", help: "Turn leases of dead (this host) or expired holders reaped by turn recovery, by reason", labelNames: ["reason"], registers: [registry] }),
    deliveries: new Counter({ name: "switchboard_deliveries_total", help: "Outbound reply deliveries by result", labelNames: ["platform", "result"], registers: [registry] }),
    queueDepth: new Gauge({ name: "switchboard_queue_jobs", help: "BullMQ jobs by queue and state", labelNames: ["queue", "state"], registers: [registry] }),
    runningTurns: new Gauge({ name: "switchboard_running_turns", help: "Turns running in this process", registers: [registry] }),
    outcomeWaits: new Counter({
      name: "switchboard_outcome_waits_total",
      help: "Requests that waited for a turn's outcome (sync API replies, sync webhooks), by where the outcome came from: memory (a turn of this process) or row (read back)",
      labelNames: ["source"],
      registers: [registry],
    }),
  };
}
