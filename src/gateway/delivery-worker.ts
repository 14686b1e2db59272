// Outbound deliveries: every reply is a ledger row before it is sent; the deliveries queue sends
// it with retries and backoff, honouring the platform's Retry-After. At-least-once: a resend
// after a crash between send and record is marked as a possible duplicate.
import { DelayedError, Worker, type Job } from "bullmq";
import type { RedisOptions } from "ioredis";
import { workerConnection } from "./queues.js";
import type { Logger } from "pino";
import type { DeliveryRow, SessionStore } from "../state/types.js";
import type { EventPublisher } from "../bus/types.js";
import type { CoreConfig } from "./config.js";
import type { GatewayMetrics } from "./metrics.js";
import { DELIVERY_QUEUE, deliveryJobId, withTimeout, type DeliveryJobData, type GatewayQueues } from "./queues.js";
import { PermanentSendError, RateLimitedError, type PlatformAdapter } from "./types.js";

export interface DeliveryDeps {
  config: CoreConfig;
  store: SessionStore;
  queues: GatewayQueues;
  adapters: Map<string, PlatformAdapter>;
  events: EventPublisher;
  metrics: GatewayMetrics;
  logger: Logger;
  redisOptions: RedisOptions;
}

const MAX_ATTEMPTS = 12;

/** Exponential backoff with jitter: 1 s, 2 s, 4 s ... capped at 5 min. */
export function deliveryBackoffMs(attempt: number): number {
  const base = Math.min(300_000, 1000 * 2 ** Math.max(0, attempt - 1));
  return Math.round(base * (0.8 + Math.random() * 0.4));
}

export class DeliveryDispatcher {
  constructor(private readonly deps: DeliveryDeps) {}

  /** Enqueue a job for each unsent delivery of a session (job ids dedupe). */
  async dispatchSession(sessionId: string): Promise<void> {
    const rows = await this.deps.store.deliveriesForSession(sessionId);
    await this.enqueue(rows.filter((r) => r.status === "pending" || r.status === "sending"));
  }

  async enqueue(rows: DeliveryRow[]): Promise<void> {
    await this.dispatchIds(rows.map((row) => row.id));
  }

  /** Enqueue known ledger rows (a turn knows the ids its flush created, whichever session holds them). */
  async dispatchIds(ids: readonly number[]): Promise<void> {
    for (const deliveryId of ids) {
      await withTimeout(this.deps.queues.deliveries.add("deliver", { deliveryId }, { jobId: deliveryJobId(deliveryId) }), 1500, "enqueue delivery");
    }
  }
}

export class DeliveryWorkers {
  private worker: Worker<DeliveryJobData> | null = null;

  constructor(private readonly deps: DeliveryDeps) {}

  start(): void {
    const { config, redisOptions } = this.deps;
    this.worker = new Worker<DeliveryJobData>(DELIVERY_QUEUE, (job, token) => this.process(job, token), {
      connection: workerConnection(redisOptions),
      prefix: config.queuePrefix,
      concurrency: 8,
      lockDuration: 30_000,
      settings: { backoffStrategy: (attemptsMade: number) => deliveryBackoffMs(attemptsMade) },
    });
    this.worker.on("error", (err) => this.deps.logger.warn({ err: err.message }, "delivery worker error"));
  }

  async stop(): Promise<void> {
    await this.worker?.close();
    this.worker = null;
  }

  private async process(job: Job<DeliveryJobData>, token: string | undefined): Promise<void> {
    const { store, adapters, metrics, logger, events } = this.deps;
    const row = await store.claimDelivery(job.data.deliveryId);
    if (!row) return; // already sent or given up
    const adapter = adapters.get(row.platform);
    if (!adapter) {
      await store.markDeliveryFailed(row.id, `no adapter for platform ${row.platform}`, true);
      metrics.deliveries.inc({ platform: row.platform, result: "failed" });
      return;
    }
    try {
      const sent = await adapter.send({ deliveryId: row.id, sessionId: row.session_id, target: row.target, text: row.text, possibleDuplicate: row.possible_duplicate });
      await store.markDeliverySent(row.id, sent.platformMessageId);
      metrics.deliveries.inc({ platform: row.platform, result: "sent" });
      void events
        .publish(row.session_id, "reply.delivered", { delivery_id: row.id, inbox_id: row.inbox_id, platform: row.platform, platform_message_id: sent.platformMessageId, possible_duplicate: row.possible_duplicate })
        .catch(() => undefined);
    } catch (err) {
      if (err instanceof RateLimitedError && token) {
        // Honour the platform's Retry-After exactly: park the job until then (not counted as a failure).
        await store.markDeliveryFailed(row.id, err.message, false);
        metrics.deliveries.inc({ platform: row.platform, result: "rate_limited" });
        logger.info({ deliveryId: row.id, retryAfterMs: err.retryAfterMs }, "delivery rate limited");
        await job.moveToDelayed(Date.now() + err.retryAfterMs, token);
        throw new DelayedError();
      }
      const final = err instanceof PermanentSendError || job.attemptsMade + 1 >= MAX_ATTEMPTS;
      await store.markDeliveryFailed(row.id, (err as Error).message, final);
      metrics.deliveries.inc({ platform: row.platform, result: final ? "failed" : "retry" });
      logger.warn({ deliveryId: row.id, platform: row.platform, err: (err as Error).message, final }, "delivery failed");
      if (!final) throw err;
    }
  }
}
