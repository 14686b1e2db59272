// The workers side of a gateway: the model, the turn and delivery workers, the platform
// connections, and the passes that redo what a dead process left. Loaded only by a process (or
// thread) that runs workers: the HTTP side never needs these modules.
import type { ModelProvider } from "../agent/types.js";
import { createProvider } from "../agent/providers/index.js";
import { WorkerPresence } from "../bus/worker-presence.js";
import { DeliveryWorkers } from "../gateway/delivery-worker.js";
import type { WakeUpSink } from "../gateway/local-wake-ups.js";
import type { McpServers } from "../agent/tools/mcp/index.js";
import { MediaError } from "../gateway/media.js";
import { addHandOnWakeUp, addRetryWakeUp } from "../gateway/queues.js";
import { Reconciler } from "../gateway/reconciler.js";
import { ToolCatalog } from "../gateway/tool-catalog.js";
import { TurnRecovery } from "../gateway/turn-recovery.js";
import { TurnWorkers } from "../gateway/turn-worker.js";
import type { PlatformAdapter } from "../gateway/types.js";
import type { Cleanups } from "./cleanups.js";
import type { GatewayCore } from "./gateway-parts.js";
import type { GatewayOptions } from "./server.js";
import type { Logger } from "pino";
import type { UsageLimits } from "../gateway/usage-limits.js";
import type { UsageInsert } from "../state/types.js";
import { without } from "../shared/bench-without.js";

/**
 * Starts the workers, then the platform connections that feed them; their cleanup stops the
 * connections before the workers. Returns the workers' in-memory wake-ups (null when they take only the queue's).
 */
export async function startWorkers(core: GatewayCore, options: GatewayOptions, mcp: McpServers | null, cleanups: Cleanups): Promise<WakeUpSink | null> {
  const { config, ingress, interrupts, platforms } = core;
  const provider = options.provider ?? await createModelProvider(core);
  const presence = announcePresence(core, cleanups);
  const turnWorkers = createTurnWorkers(core, options, { provider, mcp, presence });
  const wakeUps = turnWorkers.wakeUpSink;
  if (options.http) ingress.useWakeUps(wakeUps);
  const offInterrupts = await interrupts.onInterrupt((request) => turnWorkers.interruptLocal(request));
  const deliveryWorkers = new DeliveryWorkers(core.deliveries);
  turnWorkers.start();
  deliveryWorkers.start();
  await startAdapters(platforms.list, core);
  cleanups.push(async () => {
    offInterrupts();
    await stopAdapters(platforms.list);
    await Promise.all([turnWorkers.stop(config.shutdownTimeoutMs), deliveryWorkers.stop()]);
  });
  startRecoveryPasses(core, cleanups);
  return wakeUps;
}

/** The configured model server, or the offline echo model when none is set. */
function createModelProvider({ config }: GatewayCore): Promise<ModelProvider> {
  return createProvider({ baseUrl: config.llm.baseUrl ?? undefined, apiKey: config.llm.apiKey ?? undefined, model: config.llm.model ?? undefined, echoChunkDelayMs: config.echoChunkDelayMs, echoToolDirectives: config.echoToolDirectives });
}

/**
 * Every process that runs turns says so, so that one holding in-memory wake-ups knows whether
 * another would take them from the queue (bus/worker-presence.ts).
 */
function announcePresence({ queues, keys }: GatewayCore, cleanups: Cleanups): WorkerPresence {
  const presence = new WorkerPresence(queues.connection, keys.turnWorkers);
  presence.start();
  cleanups.push(() => presence.stop());
  return presence;
}

interface TurnWorkersInputs {
  provider: ModelProvider;
  /** Tools run in the turn workers, so the processes that run workers start the MCP servers. */
  mcp: McpServers | null;
  presence: WorkerPresence;
}

function createTurnWorkers(core: GatewayCore, options: GatewayOptions, { provider, mcp, presence }: TurnWorkersInputs): TurnWorkers {
  const { config, store, events, interrupts, metrics, logger, queues, platforms, dispatcher, ingress } = core;
  const adapters = platforms.byName;
  return new TurnWorkers({
    config, store, provider, events, metrics, logger, redisOptions: core.redis.options, sendingPlatforms: platforms.sending,
    tools: new ToolCatalog(mcp, logger),
    publishInterrupt: (request) => interrupts.publish(request),
    wakeAgain: (conversationId, inboxId, platform) => addHandOnWakeUp(queues, conversationId, inboxId, platform),
    ...((options.inProcessWakeUps ?? options.http) && !without("local-hand-off")
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
    ...(core.limits ? { onUsage: countTokens(core.limits, logger) } : {}),
  });
}

/** Each stored turn's tokens towards the daily limits; Redis unreachable, they go uncounted (with a warning). */
function countTokens(limits: UsageLimits, logger: Logger): (usage: UsageInsert, conversationKey: string) => void {
  return (usage, conversationKey) => {
    limits.count(usage, conversationKey).catch((err: Error) => logger.warn({ err: err.message, platform: usage.platform }, "tokens not counted towards the usage limits"));
  };
}

/** The platform connections (Socket Mode, the Discord bot, the Telegram poller), one after another. */
async function startAdapters(adapters: PlatformAdapter[], { ingress }: GatewayCore): Promise<void> {
  for (const adapter of adapters) await adapter.start?.(ingress);
}

async function stopAdapters(adapters: PlatformAdapter[]): Promise<void> {
  for (const adapter of adapters) await adapter.stop?.();
}

/**
 * The reconciler re-enqueues what was recorded but never woken or sent; turn recovery redoes the
 * turn of a worker that died mid-turn from its lease, not after its job's lock lapses.
 */
function startRecoveryPasses({ store, queues, ingress, dispatcher, metrics, logger, config }: GatewayCore, cleanups: Cleanups): void {
  const reconciler = new Reconciler({ store, queues, ingress, deliveries: dispatcher, logger });
  reconciler.start();
  cleanups.push(() => reconciler.stop());
  const recovery = new TurnRecovery({ store, queues, metrics, logger, intervalMs: config.turnRecoveryIntervalMs, unclaimedAfterSeconds: config.leaseTtlSeconds });
  recovery.start();
  cleanups.push(() => recovery.stop());
}
