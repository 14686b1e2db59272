// Prometheus metrics (prom-client), one registry per gateway process (and one in `serve`'s
// workers thread, summed into the process's /metrics).
import { performance } from "node:perf_hooks";
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import { registerSqliteWaitMetrics } from "./sqlite-wait-metrics.js";

/** Seconds, for the parts of an ack (sub-millisecond to a stalled write). */
const ACK_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

export interface GatewayMetrics {
  registry: Registry;
  inbound: Counter<"platform" | "result">;
  acceptSeconds: Histogram<"platform">;
  ackSeconds: Histogram<"route">;
  modelTokens: Counter<"platform" | "model" | "kind">;
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

/** What an event loop runs: the HTTP ingress, the turn and delivery workers, or both on one loop. */
export type EventLoopRole = "http" | "workers" | "http+workers";

export function eventLoopRole(options: { http: boolean; workers: boolean }): EventLoopRole {
  if (options.http && options.workers) return "http+workers";
  return options.http ? "http" : "workers";
}

/**
 * The time this thread's event loop has spent running code rather than waiting for I/O or timers,
 * labelled by what the loop runs. Its rate is the loop's busy share: near 1 for the workers loop
 * means the turns are the bottleneck and new messages wait in the inbox (durable, answered in
 * order once it eases); near 1 for the HTTP loop means acks queue behind each other.
 */
function registerEventLoopBusy(registry: Registry, role: EventLoopRole): void {
  new Counter({
    name: "switchboard_event_loop_busy_seconds_total",
    help: "Time this event loop spent running code (not waiting for I/O or timers), by what it runs: http, workers, or http+workers on one loop",
    labelNames: ["loop"],
    registers: [registry],
    collect() {
      // Read at scrape time: an absolute value the loop keeps, not increments.
      this.reset();
      this.inc({ loop: role }, performance.eventLoopUtilization().active / 1000);
    },
  });
}

export function createMetrics(role: EventLoopRole): GatewayMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: PROCESS_METRICS_PREFIX });
  registerSqliteWaitMetrics(registry);
  registerEventLoopBusy(registry, role);
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
    modelTokens: new Counter({ name: "switchboard_model_tokens_total", help: "Model tokens of stored turns, by platform, model and kind (prompt, completion)", labelNames: ["platform", "model", "kind"], registers: [registry] }),
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
