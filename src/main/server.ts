// The composition root: one function builds a gateway process from its config — HTTP +
// WebSocket ingress, turn and delivery workers, or both — and one handle stops it cleanly.
//
// startGateway runs named steps, each in a module of its own: the parts every process has
// (gateway-parts.ts: data folder -> Redis -> store -> buses -> queues -> shared state -> adapters
// -> ingress), then the workers side (start-workers.ts) where workers run, then the HTTP side
// (serve-http.ts) where HTTP is served. Each step adds what undoes it; stop() runs those in
// reverse (cleanups.ts).
import type { Logger } from "pino";
import type { ModelProvider } from "../agent/types.js";
import type { SessionStore } from "../state/types.js";
import type { GatewayConfig } from "./config.js";
import type { WorkersThreadStatus } from "./workers-thread-protocol.js";
import type { KeyAttemptLimits } from "../clients/key-attempts.js";
import type { EventBus } from "../bus/event-bus.js";
import type { Ingress } from "../gateway/ingress.js";
import { RedisKeys } from "../bus/keys.js";
import { createLogger } from "../gateway/logger.js";
import { createMetrics, eventLoopRole, type GatewayMetrics } from "../gateway/metrics.js";
import type { GatewayQueues } from "../gateway/queues.js";
import type { WakeUpSink } from "../gateway/local-wake-ups.js";
import type { McpServers, McpServerStatus } from "../agent/tools/mcp/index.js";
import type { TurnOutcome } from "../gateway/types.js";
import { runCleanups, type Cleanups } from "./cleanups.js";
import {
  buildIngress,
  connectBuses,
  connectRedis,
  loadPlatformAdapters,
  openQueues,
  openSessionStore,
  prepareDataDir,
  startSharedState,
} from "./gateway-parts.js";
import { VERSION } from "./version.js";

export { VERSION };

/** How long start-up waits for MCP servers' first connection; a slower one joins when it is up. */
const MCP_START_WAIT_MS = 10_000;

export interface GatewayOptions {
  /** Serve HTTP + WebSocket ingress. */
  http: boolean;
  /** Run turn and delivery workers. */
  workers: boolean;
  logger?: Logger;
  /** A model provider to use instead of the configured one (tests, embedding). */
  provider?: ModelProvider;
  /**
   * Workers: take wake-ups in memory from this process's ingress (or, in the workers thread, from
   * the main thread's) rather than a BullMQ job per message (local-wake-ups.ts). Default: when this
   * process serves HTTP too. Tests say no to drive the queue path alone.
   */
  inProcessWakeUps?: boolean;
  /** Wrong platform signatures an address may send per window (tests that send many raise it). */
  platformAttemptLimits?: KeyAttemptLimits;
  /** Bytes of platform request bodies read before their signature check, at once (default 8 MiB). */
  unverifiedBudgetBytes?: number;
  /**
   * SQLite: checkpoint the WAL from a thread of its own (default) rather than inside commits. The
   * workers thread of `serve` says no: the main thread's checkpointer already checkpoints the
   * file, so its connection checkpoints neither in a thread nor inside its commits (a checkpoint
   * there would hold the write lock the acks' inserts wait for).
   */
  backgroundCheckpoints?: boolean;
  /** HTTP only, with this process's workers in a thread of their own: what /health says about them. */
  workersThread?: () => WorkersThreadStatus;
  /** HTTP only: metrics of this process's workers thread, summed into /metrics with the main thread's. */
  workersMetrics?: () => Promise<object[]>;
  /** HTTP only, MCP servers configured and run by the workers thread: their state for /health. */
  workersMcp?: () => Record<string, McpServerStatus>;
  /**
   * Workers without HTTP (serve's workers thread): where the outcomes of their turns go, for the
   * ingress that waits on them elsewhere. With HTTP in the same gateway they go to its ingress.
   */
  onTurnOutcomes?: (outcomes: TurnOutcome[]) => void;
}

export interface GatewayHandle {
  config: GatewayConfig;
  /** http://host:port when serving HTTP. */
  url: string | null;
  port: number | null;
  ingress: Ingress;
  store: SessionStore;
  events: EventBus;
  metrics: GatewayMetrics;
  queues: GatewayQueues;
  /** The workers' in-memory wake-ups; null when they take BullMQ's only (or this process runs none). */
  wakeUps: WakeUpSink | null;
  redisUrl: string;
  logger: Logger;
  /** The state of this process's MCP servers; null when it runs none. */
  mcpStatus(): Record<string, McpServerStatus> | null;
  stop(): Promise<void>;
}

/** Loaded only when servers are configured: the SDK costs every process start a noticeable import. */
async function startMcpServers(config: GatewayConfig, logger: Logger, cleanups: Array<() => Promise<void> | void>): Promise<McpServers> {
  const { McpServers } = await import("../agent/tools/mcp/servers.js");
  const servers = new McpServers({ servers: config.mcpServers, logger, clientInfo: { name: "switchboard", version: VERSION } });
  cleanups.push(() => servers.close());
  await servers.start(MCP_START_WAIT_MS);
  return servers;
}

/**
 * Builds and starts a gateway process: the parts every process has, then the workers side and the
 * HTTP side where asked for (each side's modules imported only then). A step that fails stops the
 * steps before it.
 */
export async function startGateway(config: GatewayConfig, options: GatewayOptions): Promise<GatewayHandle> {
  const logger = options.logger ?? createLogger(config.logLevel);
  const cleanups: Cleanups = [];
  const cleanup = (): Promise<void> => runCleanups(cleanups, logger);
  try {
    const tightened = prepareDataDir(config, logger);
    const redis = await connectRedis(config, logger, cleanups);
    const keys = new RedisKeys(config.queuePrefix);
    const store = await openSessionStore(config, options, { redis, keys, tightened, logger }, cleanups);
    const buses = connectBuses(config, redis, logger, cleanups);
    const metrics = createMetrics(eventLoopRole(options));
    const queues = await openQueues(config, redis, logger, cleanups);
    const shared = await startSharedState({ store, redis, keys, logger }, cleanups);
    const platforms = await loadPlatformAdapters(config, redis, shared, logger);
    const core = buildIngress({ config, logger, keys, redis, store, ...buses, metrics, queues, platforms });

    let mcp: McpServers | null = null;
    let wakeUps: WakeUpSink | null = null;
    if (options.workers) {
      const { startWorkers } = await import("./start-workers.js");
      // Tools run in the turn workers, so the processes that run workers start the MCP servers.
      if (Object.keys(config.mcpServers).length > 0) mcp = await startMcpServers(config, logger, cleanups);
      wakeUps = await startWorkers(core, options, mcp, cleanups);
    }
    let port: number | null = null;
    if (options.http) {
      const { serveHttp } = await import("./serve-http.js");
      port = await serveHttp(core, options, mcp, cleanups);
    }
    return {
      config,
      url: port !== null ? gatewayUrl(config.host, port) : null,
      port,
      ingress: core.ingress,
      store,
      events: buses.events,
      metrics,
      queues,
      wakeUps,
      redisUrl: redis.url,
      logger,
      mcpStatus: () => mcp?.status() ?? null,
      stop: cleanup,
    };
  } catch (err) {
    await cleanup();
    throw err;
  }
}

function gatewayUrl(host: string, port: number): string {
  return `http://${host.includes(":") ? `[${host}]` : host}:${port}`;
}
