// The parts every gateway process has, whether it serves HTTP, runs workers or both: the data
// folder, Redis, the session store, the buses, the queues, the state shared with the other
// processes, the platform adapters and the ingress. One step each, in the order startGateway
// (server.ts) runs them; each adds its cleanup as it goes.
import { join } from "node:path";
import { Redis, type RedisOptions } from "ioredis";
import type { Logger } from "pino";
// Not state/index.js: it re-exports the PostgreSQL store, which only a PostgreSQL config loads.
import { describeStore, openStore } from "../state/open-store.js";
import { ensurePrivateDir, type OnTightened } from "../state/private-files.js";
import type { SessionStore } from "../state/types.js";
import { loadAdapters } from "../adapters/load-adapters.js";
import { THREADED_SESSION_PREFIXES, threadKeyForSessionKey } from "../adapters/thread-keys.js";
import { startEmbeddedRedis, type EmbeddedRedis } from "../bus/embedded-redis.js";
import { EventBus } from "../bus/event-bus.js";
import { InterruptBus } from "../bus/interrupt-bus.js";
import type { RedisKeys } from "../bus/keys.js";
import { RedisLeaseNotifier } from "../bus/lease-notifier.js";
import { SharedRateLimits } from "../bus/rate-limit-windows.js";
import { redisOptionsFromUrl } from "../bus/redis-url.js";
import { RedisSingletonLocks } from "../bus/singleton-lock.js";
import { SharedThreadMemory } from "../bus/thread-memory.js";
import { DeliveryDispatcher, type DeliveryDeps } from "../gateway/delivery-worker.js";
import { AccessPolicy } from "../gateway/access.js";
import { limitsConfigured, UsageLimits } from "../gateway/usage-limits.js";
import { BotLoops } from "../gateway/bot-loops.js";
import { Ingress } from "../gateway/ingress.js";
import type { GatewayMetrics } from "../gateway/metrics.js";
import { createQueues, untilReady, type GatewayQueues } from "../gateway/queues.js";
import type { PlatformAdapter } from "../gateway/types.js";
import type { Cleanups } from "./cleanups.js";
import type { GatewayConfig } from "./config.js";
import type { GatewayOptions } from "./server.js";
import { without } from "../shared/bench-without.js";

const WAL_CHECKPOINT_INTERVAL_MS = 200;

export interface RedisConnections {
  /** REDIS_URL, or the private redis-server's socket when it is unset. */
  url: string;
  options: RedisOptions;
  /** Commands, auto-pipelined. */
  redis: Redis;
  /** Pub/sub. */
  subscriber: Redis;
}

export interface Buses {
  events: EventBus;
  interrupts: InterruptBus;
}

/** Threads the bot is in and Retry-After windows, shared with the deployment's other processes. */
export interface SharedState {
  threads: SharedThreadMemory;
  rateLimits: SharedRateLimits;
}

export interface Platforms {
  /** The enabled adapters, in the order they start. */
  list: PlatformAdapter[];
  byName: Map<string, PlatformAdapter>;
  /** Platforms whose replies go out through the deliveries ledger. */
  sending: () => Set<string>;
}

/** Everything the workers and the HTTP side are built on. */
export interface GatewayCore extends Buses {
  config: GatewayConfig;
  logger: Logger;
  keys: RedisKeys;
  redis: RedisConnections;
  store: SessionStore;
  metrics: GatewayMetrics;
  queues: GatewayQueues;
  platforms: Platforms;
  /** What delivery senders are built with (the dispatcher here, the delivery workers). */
  deliveries: DeliveryDeps;
  dispatcher: DeliveryDispatcher;
  ingress: Ingress;
  /** The usage limits, when any is configured: ingress checks them, the workers count tokens. */
  limits: UsageLimits | null;
}

/**
 * Transcripts and platform tokens live in the data folder: the owner's alone. With DATABASE_URL
 * nothing durable is kept on this machine (the folder may still hold the private redis-server's
 * socket). Returns what reports a permission it had to tighten.
 */
export function prepareDataDir(config: GatewayConfig, logger: Logger): OnTightened {
  const tightened: OnTightened = (path, from, to) =>
    logger.warn({ path, from: from.toString(8), to: to.toString(8) }, "tightened the permissions of a private file");
  ensurePrivateDir(config.dataDir, tightened);
  return tightened;
}

/** REDIS_URL's server, or a private redis-server started here when it is unset. */
export async function connectRedis(config: GatewayConfig, logger: Logger, cleanups: Cleanups): Promise<RedisConnections> {
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
  return { url: redisUrl, options: redisOptions, redis, subscriber };
}

export interface StoreInputs {
  redis: RedisConnections;
  keys: RedisKeys;
  tightened: OnTightened;
  logger: Logger;
}

/** The session store, with the Redis notices that wake lease waiters in other processes. */
export async function openSessionStore(
  config: GatewayConfig,
  options: Pick<GatewayOptions, "backgroundCheckpoints">,
  { redis, keys, tightened, logger }: StoreInputs,
  cleanups: Cleanups,
): Promise<SessionStore> {
  const notifier = new RedisLeaseNotifier(redis.redis, redis.subscriber, keys.leaseReleased);
  cleanups.push(() => notifier.close());
  // SQLite: WAL checkpoints (a file copy and fsync) run in a thread, not inside a request's commit.
  const store = await openStore(config, {
    notifier,
    ...(without("wal-checkpointer") ? {} : options.backgroundCheckpoints === false ? { checkpointedElsewhere: true } : { backgroundCheckpointMs: WAL_CHECKPOINT_INTERVAL_MS }),
    onModeTightened: tightened,
  });
  cleanups.push(() => store.close());
  logger.info({ store: describeStore(config) }, "session store open");
  return store;
}

/** The per-session event streams and the interrupts, over Redis. */
export function connectBuses(config: GatewayConfig, { redis, subscriber }: RedisConnections, logger: Logger, cleanups: Cleanups): Buses {
  const prefix = config.queuePrefix;
  const events = new EventBus({ redis, subscriber, prefix, logger });
  cleanups.push(() => events.close());
  const interrupts = new InterruptBus({ redis, subscriber, prefix, logger });
  cleanups.push(() => interrupts.close());
  return { events, interrupts };
}

/** The turns and deliveries queues, ready to enqueue when Redis is there. */
export async function openQueues(config: GatewayConfig, redis: RedisConnections, logger: Logger, cleanups: Cleanups): Promise<GatewayQueues> {
  const queues = createQueues(redis.options, config.queuePrefix);
  cleanups.push(() => queues.close());
  // When Redis is not there, ingress still records messages and the reconciler enqueues them once it is.
  await untilReady(queues.connection, 5_000).catch((err: Error) => logger.warn({ err: err.message }, "redis is not ready; starting anyway"));
  return queues;
}

export interface SharedStateInputs {
  store: SessionStore;
  redis: RedisConnections;
  keys: RedisKeys;
  logger: Logger;
}

export async function startSharedState({ store, redis: { redis, subscriber }, keys, logger }: SharedStateInputs, cleanups: Cleanups): Promise<SharedState> {
  const threads = await SharedThreadMemory.start({
    store, redis, subscriber, channel: keys.threadsChannel, prefixes: THREADED_SESSION_PREFIXES, threadKeyOf: threadKeyForSessionKey, logger,
  });
  cleanups.push(() => threads.close());
  const rateLimits = await SharedRateLimits.start({ redis, subscriber, channel: keys.rateLimitsChannel, logger });
  cleanups.push(() => rateLimits.close());
  return { threads, rateLimits };
}

/** The enabled platforms' adapters, built (each platform's module loaded only when enabled), not started. */
export async function loadPlatformAdapters(config: GatewayConfig, redis: RedisConnections, { threads, rateLimits }: SharedState, logger: Logger): Promise<Platforms> {
  const list: PlatformAdapter[] = await loadAdapters(config, {
    logger, bodyLimitBytes: config.bodyLimitBytes, threads, rateLimits, locks: new RedisSingletonLocks(redis.redis, config.queuePrefix),
    allowedBots: new Set(config.access.allowBots),
  });
  const byName = new Map(list.map((a) => [a.platform, a]));
  return { list, byName, sending: () => new Set(byName.keys()) };
}

export type IngressInputs = Omit<GatewayCore, "deliveries" | "dispatcher" | "ingress" | "limits">;

/** Where every message comes in, and the dispatcher that sends a session's unsent replies. */
export function buildIngress(parts: IngressInputs): GatewayCore {
  const { config, store, queues, events, interrupts, metrics, logger, platforms } = parts;
  const deliveries: DeliveryDeps = { config, store, queues, adapters: platforms.byName, events, metrics, logger, redisOptions: parts.redis.options };
  const dispatcher = new DeliveryDispatcher(deliveries);
  const limits = limitsConfigured(config.limits) ? new UsageLimits(parts.redis.redis, parts.keys, config.limits) : null;
  const ingress = new Ingress({
    config, store, queues, events, interrupts, metrics, logger, sendingPlatforms: platforms.sending,
    dispatchDeliveries: (sessionId) => dispatcher.dispatchSession(sessionId),
    ...(config.access.mode !== "open" || config.access.deny.length > 0 ? { access: new AccessPolicy(config.access, store) } : {}),
    ...(limits ? { limits } : {}),
    ...(config.access.allowBots.length > 0 ? { botLoops: new BotLoops(parts.redis.redis, parts.keys, config.access.maxBotExchanges) } : {}),
  });
  return { ...parts, deliveries, dispatcher, ingress, limits };
}
