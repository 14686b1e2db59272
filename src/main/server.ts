// The composition root: one function builds a gateway process from its config — HTTP +
// WebSocket ingress, turn and delivery workers, or both — and one handle stops it cleanly.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { Redis, type RedisOptions } from "ioredis";
import type { Logger } from "pino";
import type { ModelProvider } from "../agent/types.js";
// Not state/index.js: it re-exports the PostgreSQL store, which only a PostgreSQL config loads.
import { describeStore, openStore } from "../state/open-store.js";
import { ensurePrivateDir, type OnTightened } from "../state/private-files.js";
import type { SessionStore } from "../state/types.js";
import { loadAdapters } from "../adapters/load-adapters.js";
import { THREADED_SESSION_PREFIXES, threadKeyForSessionKey } from "../adapters/thread-keys.js";
import type { BrowserRules } from "../clients/browser-rules.js";
import type { GatewayConfig } from "./config.js";
import type { WorkersThreadStatus } from "./workers-thread-protocol.js";
import { DeliveryDispatcher } from "../gateway/delivery-worker.js";
import { startEmbeddedRedis, type EmbeddedRedis } from "../bus/embedded-redis.js";
import { EventBus } from "../bus/event-bus.js";
import { Ingress } from "../gateway/ingress.js";
import { MediaError } from "../gateway/media.js";
import { InterruptBus } from "../bus/interrupt-bus.js";
import { RedisKeys } from "../bus/keys.js";
import { WorkerPresence } from "../bus/worker-presence.js";
import { createLogger } from "../gateway/logger.js";
import { createMetrics, eventLoopRole, type GatewayMetrics } from "../gateway/metrics.js";
import { addHandOnWakeUp, addRetryWakeUp, createQueues, untilReady, type GatewayQueues } from "../gateway/queues.js";
import type { WakeUpSink } from "../gateway/local-wake-ups.js";
import { RedisLeaseNotifier } from "../bus/lease-notifier.js";
import { redisOptionsFromUrl } from "../bus/redis-url.js";
import { SharedRateLimits } from "../bus/rate-limit-windows.js";
import { SharedThreadMemory } from "../bus/thread-memory.js";
import { RedisSingletonLocks } from "../bus/singleton-lock.js";
import type { McpServers, McpServerStatus } from "../gateway/mcp/index.js";
import type { PlatformAdapter, TurnOutcome } from "../gateway/types.js";
import type { WebSocketHub } from "../clients/ws/index.js";

export const VERSION = "0.1.0";

const WAL_CHECKPOINT_INTERVAL_MS = 200;

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
  const { McpServers } = await import("../gateway/mcp/servers.js");
  const servers = new McpServers({ servers: config.mcpServers, logger, clientInfo: { name: "switchboard", version: VERSION } });
  cleanups.push(() => servers.close());
  await servers.start(MCP_START_WAIT_MS);
  return servers;
}

export async function startGateway(config: GatewayConfig, options: GatewayOptions): Promise<GatewayHandle> {
  const logger = options.logger ?? createLogger(config.logLevel);
  const cleanups: Array<() => Promise<void> | void> = [];
  const cleanup = async (): Promise<void> => {
    for (const fn of cleanups.reverse()) {
      try {
        await fn();
      } catch (err) {
        logger.warn({ err: (err as Error).message }, "shutdown step failed");
      }
    }
    cleanups.length = 0;
  };
  try {
    // Transcripts and platform tokens live here: the owner's alone. With DATABASE_URL nothing
    // durable is kept on this machine (the folder may still hold the private redis-server's socket).
    const tightened: OnTightened = (path, from, to) =>
      logger.warn({ path, from: from.toString(8), to: to.toString(8) }, "tightened the permissions of a private file");
    ensurePrivateDir(config.dataDir, tightened);

    let embedded: EmbeddedRedis | null = null;
    let redisUrl = config.redisUrl;
    if (!redisUrl) {
      embedded = await startEmbeddedRedis(join(config.dataDir, "redis"));
      cleanups.push(() => embedded?.stop());
      redisUrl = embedded.url;
      logger.info({ socket: embedded.socketPath }, "started a private redis-server (REDIS_URL is unset)");
    }
    const redisOptions: RedisOptions = redisOptionsFromUrl(redisUrl);
    // Auto-pipelining: the commands running turns issue in one tick (events of many sessions,
    // lease-release notices) leave in one socket write; one connection keeps their order.
    const redis = new Redis({ ...redisOptions, maxRetriesPerRequest: 2, retryStrategy: (n) => Math.min(50 * n, 1000), enableAutoPipelining: true });
    const subscriber = new Redis({ ...redisOptions, maxRetriesPerRequest: null, retryStrategy: (n) => Math.min(50 * n, 1000) });
    for (const client of [redis, subscriber]) client.on("error", () => undefined);
    cleanups.push(() => {
      redis.disconnect();
      subscriber.disconnect();
    });

    const prefix = config.queuePrefix;
    const keys = new RedisKeys(prefix);
    const notifier = new RedisLeaseNotifier(redis, subscriber, keys.leaseReleased);
    cleanups.push(() => notifier.close());
    // SQLite: WAL checkpoints (a file copy and fsync) run in a thread, not inside a request's commit.
    const store = await openStore(config, {
      notifier,
      ...(options.backgroundCheckpoints === false ? { checkpointedElsewhere: true } : { backgroundCheckpointMs: WAL_CHECKPOINT_INTERVAL_MS }),
      onModeTightened: tightened,
    });
    cleanups.push(() => store.close());
    logger.info({ store: describeStore(config) }, "session store open");

    const events = new EventBus({ redis, subscriber, prefix, logger });
    cleanups.push(() => events.close());
    const interrupts = new InterruptBus({ redis, subscriber, prefix, logger });
    cleanups.push(() => interrupts.close());

    const metrics = createMetrics(eventLoopRole(options));
    const queues = createQueues(redisOptions, prefix);
    cleanups.push(() => queues.close());
    // Start ready to enqueue when Redis is there; when it is not, ingress still records messages
    // and the reconciler enqueues them once it is.
    await untilReady(queues.connection, 5_000).catch((err: Error) => logger.warn({ err: err.message }, "redis is not ready; starting anyway"));

    const threads = await SharedThreadMemory.start({
      store, redis, subscriber, channel: keys.threadsChannel, prefixes: THREADED_SESSION_PREFIXES, threadKeyOf: threadKeyForSessionKey, logger,
    });
    cleanups.push(() => threads.close());
    const rateLimits = await SharedRateLimits.start({ redis, subscriber, channel: keys.rateLimitsChannel, logger });
    cleanups.push(() => rateLimits.close());
    const adapterList: PlatformAdapter[] = await loadAdapters(config, {
      logger, bodyLimitBytes: config.bodyLimitBytes, threads, rateLimits, locks: new RedisSingletonLocks(redis, prefix),
    });
    const adapters = new Map(adapterList.map((a) => [a.platform, a]));
    const sendingPlatforms = (): Set<string> => new Set(adapters.keys());
    const deliveryDeps = { config, store, queues, adapters, events, metrics, logger, redisOptions };
    const dispatcher = new DeliveryDispatcher(deliveryDeps);
    const ingress = new Ingress({
      config, store, queues, events, interrupts, metrics, logger, sendingPlatforms,
      dispatchDeliveries: (sessionId) => dispatcher.dispatchSession(sessionId),
    });

    let mcp: McpServers | null = null;
    let wakeUps: WakeUpSink | null = null;
    if (options.workers) {
      // Loaded only by a process (or thread) that runs workers: the HTTP side never needs them.
      const [{ createProvider }, { TurnWorkers }, { DeliveryWorkers }, { Reconciler }, { TurnRecovery }, { ToolCatalog }] = await Promise.all([
        import("../agent/providers/index.js"), import("../gateway/turn-worker.js"), import("../gateway/delivery-worker.js"),
        import("../gateway/reconciler.js"), import("../gateway/turn-recovery.js"), import("../gateway/tool-catalog.js"),
      ]);
      // Tools run in the turn workers, so the processes that run workers start the MCP servers.
      if (Object.keys(config.mcpServers).length > 0) mcp = await startMcpServers(config, logger, cleanups);
      const provider = options.provider ?? await createProvider({ baseUrl: config.llm.baseUrl ?? undefined, apiKey: config.llm.apiKey ?? undefined, model: config.llm.model ?? undefined, echoChunkDelayMs: config.echoChunkDelayMs });
      // Every process that runs turns says so, so that one holding in-memory wake-ups knows whether
      // another would take them from the queue (bus/worker-presence.ts).
      const presence = new WorkerPresence(queues.connection, keys.turnWorkers);
      presence.start();
      cleanups.push(() => presence.stop());
      const turnWorkers = new TurnWorkers({
        config, store, provider, events, metrics, logger, redisOptions, sendingPlatforms,
        tools: new ToolCatalog(mcp, logger),
        publishInterrupt: (request) => interrupts.publish(request),
        wakeAgain: (conversationId, inboxId, platform) => addHandOnWakeUp(queues, conversationId, inboxId, platform),
        ...((options.inProcessWakeUps ?? options.http)
          ? {
              inProcess: {
                retryLater: ({ conversationId, inboxId }, err) => {
                  logger.warn({ conversationId, inboxId, err: err.message }, "turn to be retried; its wake-up goes through the queue");
                  void addRetryWakeUp(queues, conversationId, inboxId);
                },
                // With Redis down nobody else can take a wake-up: keep them all here.
                sharing: () => presence.othersPresent() && queues.connection.status === "ready",
                onSharingChange: (listener) => presence.onChange(listener),
              },
            }
          : {}),
        openStream: (platform, target) => adapters.get(platform)?.openStream?.(target) ?? null,
        typing: async (platform, target) => adapters.get(platform)?.typing?.(target),
        fetchMedia: async (platform, ref, limits) => {
          const adapter = adapters.get(platform);
          if (!adapter?.fetchMedia) throw new MediaError("fetch_failed", `files from ${platform} cannot be downloaded here`);
          return adapter.fetchMedia(ref, limits);
        },
        // Sent at once under the ledger's claim; the deliveries queue only for retries.
        dispatchDeliveries: (deliveryIds) => dispatcher.deliverNow(deliveryIds),
        onOutcomes: options.http ? (outcomes) => ingress.settleOutcomes(outcomes) : options.onTurnOutcomes,
      });
      wakeUps = turnWorkers.wakeUpSink;
      if (options.http) ingress.useWakeUps(wakeUps);
      const offInterrupts = await interrupts.onInterrupt((request) => turnWorkers.interruptLocal(request));
      const deliveryWorkers = new DeliveryWorkers(deliveryDeps);
      turnWorkers.start();
      deliveryWorkers.start();
      for (const adapter of adapterList) await adapter.start?.(ingress);
      cleanups.push(async () => {
        offInterrupts();
        for (const adapter of adapterList) await adapter.stop?.();
        await Promise.all([turnWorkers.stop(config.shutdownTimeoutMs), deliveryWorkers.stop()]);
      });
      const reconciler = new Reconciler({ store, queues, ingress, deliveries: dispatcher, logger });
      reconciler.start();
      cleanups.push(() => reconciler.stop());
      // A worker that dies mid-turn leaves its lease: its turn is redone from here, not after its job's lock lapses.
      const recovery = new TurnRecovery({ store, queues, metrics, logger, intervalMs: config.turnRecoveryIntervalMs, unclaimedAfterSeconds: config.leaseTtlSeconds });
      recovery.start();
      cleanups.push(() => recovery.stop());
    }

    let server: Server | null = null;
    let hub: WebSocketHub | null = null;
    let port: number | null = null;
    if (options.http) {
      // Loaded only by a process (or thread) that serves HTTP: the workers thread never needs them.
      const [{ buildApp }, { withFastPath }, { ApiKeyCheck }, { hostAllowed, originAllowed }, { clientAddress }, { protectedAccess }, { healthRouter }, { createApiServerRouter, chatCompletionsRoute }, { sessionsRouter }, { adminRouter }, { consoleRouter }, { attachWebSocketHub, acceptSend }] = await Promise.all([
        import("./app.js"), import("./http-fast-path.js"), import("../clients/auth.js"), import("../clients/browser-rules.js"), import("../clients/forwarded.js"), import("../clients/protected-access.js"), import("../clients/health.js"),
        import("../clients/openai/index.js"), import("../clients/sessions-api.js"), import("../clients/admin.js"), import("../clients/console.js"), import("../clients/ws/index.js"),
      ]);
      const browser: BrowserRules = { allowedHosts: config.allowedHosts, allowedOrigins: config.allowedOrigins, trustProxyHops: config.trustProxy };
      // One count of wrong keys for HTTP and /ws.
      const keyCheck = new ApiKeyCheck(config.apiKey);
      const apiDeps = { ingress, events, store, config, logger };
      const app = buildApp({
        logger,
        apiKey: config.apiKey,
        keyCheck,
        browser,
        operationalRoutes: [healthRouter({ store, redis, queues, metrics, workersEnabled: options.workers || options.workersThread !== undefined, workersThread: options.workersThread, moreMetrics: options.workersMetrics, version: VERSION, mcp: mcp ? () => mcp.status() : (options.workersMcp ?? null) })],
        publicRoutes: adapterList.flatMap((a) => (a.routes ? [a.routes(ingress)] : [])),
        protectedRoutes: [
          createApiServerRouter(apiDeps),
          sessionsRouter(store, ingress, config.bodyLimitBytes),
          adminRouter(queues),
        ],
        consoleRoutes: [consoleRouter({ apiKeyRequired: config.apiKey !== null })],
      });
      // Slack's events, the webhook routes and the API's chat completions skip express (same
      // answers, less work per request); everything else is the app's.
      server = createServer(withFastPath({
        routes: adapterList.flatMap((a) => a.plainRoutes?.(ingress) ?? []),
        directRoutes: [chatCompletionsRoute(apiDeps, protectedAccess(keyCheck, browser))],
        hostAllowed: keyCheck.required ? undefined : (req) => hostAllowed(req, browser),
        logger,
        fallback: app,
        onAnswered: (route, seconds) => metrics.ackSeconds.observe({ route }, seconds),
      }));
      hub = attachWebSocketHub(server, {
        bus: events,
        ingress,
        onSend: (frame) => acceptSend(ingress, frame),
        authenticate: (token, req) => {
          const decision = keyCheck.check(token, clientAddress(req, browser.trustProxyHops));
          return decision.ok || (decision.reason === "rate_limited" ? { retryAfterSeconds: decision.retryAfterSeconds } : false);
        },
        hostAllowed: config.apiKey === null ? (req) => hostAllowed(req, browser) : undefined,
        originAllowed: (req) => originAllowed(req, browser),
        clientAddress: (req) => clientAddress(req, browser.trustProxyHops),
        maxConnections: config.ws.maxConnections,
        maxConnectionsPerAddress: config.ws.maxConnectionsPerIp,
        logger,
        maxFrameBytes: config.ws.maxFrameBytes,
        maxSubscriptionsPerClient: config.ws.maxSubscriptions,
        heartbeatIntervalMs: config.ws.heartbeatMs,
      });
      const listening = server;
      await new Promise<void>((resolve, reject) => {
        listening.once("error", reject);
        listening.listen(config.port, config.host, () => resolve());
      });
      port = (server.address() as AddressInfo).port;
      // Stop taking requests first on shutdown.
      cleanups.push(async () => {
        await hub?.close();
        await new Promise<void>((resolve) => {
          listening.close(() => resolve());
          listening.closeAllConnections();
        });
      });
      logger.info({ url: `http://${config.host}:${port}` }, "gateway listening");
    }
    const host = config.host.includes(":") ? `[${config.host}]` : config.host;
    return {
      config,
      url: port !== null ? `http://${host}:${port}` : null,
      port,
      ingress,
      store,
      events,
      metrics,
      queues,
      wakeUps,
      redisUrl,
      logger,
      mcpStatus: () => mcp?.status() ?? null,
      stop: cleanup,
    };
  } catch (err) {
    await cleanup();
    throw err;
  }
}
