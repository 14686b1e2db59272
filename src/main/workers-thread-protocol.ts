// What the main thread of `switchboard serve` and its workers thread say to each other.
import type { WakeUp } from "../gateway/local-wake-ups.js";
import type { QueuedNotice } from "../gateway/queued-notices.js";
import type { TurnOutcome } from "../gateway/types.js";
import type { McpServerStatus } from "../agent/tools/mcp/index.js";

/** Given to the thread at its start. */
export interface WorkersThreadData {
  /** The Redis the main thread uses (its private redis-server's socket when REDIS_URL is unset). */
  redisUrl: string;
}

/** Thread -> main. */
export type FromWorkersThread =
  /** announcer: the id ingress writes into the rows whose wake-ups it hands to this thread (null: it takes none). */
  | { type: "ready"; announcer: string | null }
  | { type: "metrics"; id: number; metrics: object[] }
  /** The thread's MCP servers (it runs them, since tools run in turns): sent at start, then every MCP_STATUS_INTERVAL_MS. */
  | { type: "mcp"; status: Record<string, McpServerStatus> }
  /** The outcomes of the rows its turns answered since the last such message, each after its lease's release. */
  | { type: "outcomes"; outcomes: TurnOutcome[] };

/**
 * Main -> thread. stop: finish running turns (SHUTDOWN_TIMEOUT_MS), release leases, close, exit.
 * metrics: answer with the thread's registry as `getMetricsAsJSON()` gives it.
 * wake: wake-ups of rows the main thread's ingress just recorded (local-wake-ups.ts).
 */
export type ToWorkersThread = { type: "stop" } | { type: "metrics"; id: number } | { type: "wake"; wakeUps: WakeUp[]; notices: QueuedNotice[] };

/** How often the workers thread tells the main thread how its MCP servers are (for /health). */
export const MCP_STATUS_INTERVAL_MS = 1_000;

/** What /health reports about the workers thread. */
export interface WorkersThreadStatus {
  /** A thread is up and its workers run. */
  running: boolean;
  /** The running thread's id (`worker_threads` threadId); null between two threads. */
  thread_id: number | null;
  /** Times the thread died and was started again. */
  restarts: number;
}
