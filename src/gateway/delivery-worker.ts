// Outbound deliveries: every reply is a ledger row before it is sent. A turn's reply is sent at
// once by the process that ran the turn; the deliveries queue takes over only for a retry (a
// failed or rate-limited attempt, honouring the platform's Retry-After, with backoff) or a row
// another sender holds. Every attempt runs under the ledger's claim, so two senders never send a
// row at once. At-least-once: a resend after a crash between send and record is marked as a
// possible duplicate.
import { DelayedError, Worker, type Job } from "bullmq";
import type { RedisOptions } from "ioredis";
import type { Logger } from "pino";
import type { DeliveryRow, DeliveryStore } from "../state/types.js";
import type { EventPublisher } from "../bus/types.js";
import type { CoreConfig } from "./config.js";
import type { GatewayMetrics } from "./metrics.js";
import { DELIVERY_QUEUE, closeWorker, deliveryJobId, withTimeout, workerConnection, type DeliveryJobData, type GatewayQueues } from "./queues.js";
import { PermanentSendError, RateLimitedError, type PlatformAdapter } from "./types.js";

export interface DeliveryDeps {
  config: CoreConfig;
  store: DeliveryStore;
  queues: GatewayQueues;
  adapters: Map<string, PlatformAdapter>;
  events: EventPublisher;
  metrics: GatewayMetrics;
  logger: Logger;
  redisOptions: RedisOptions;
}

const MAX_ATTEMPTS = 12;

/**
 * A row another sender claimed is taken again only once that claim is this old: until then the
 * send may still be in flight (a live sender records within a request's time); after it, the
 * sender is taken for dead and the resend is marked as a possible duplicate.
 */
export const SENDING_CLAIM_SECONDS = 5;

/** How long the deliveries worker may take to close (an attempt in flight is one platform request). */
const DELIVERY_WORKER_CLOSE_MS = 15_000;

/** How long enqueueing one delivery job may take. */
const ENQUEUE_TIMEOUT_MS = 1500;

/** Exponential backoff with jitter: 1 s, 2 s, 4 s ... capped at 5 min. */
export function deliveryBackoffMs(attempt: number): number {
  const base = Math.min(300_000, 1000 * 2 ** Math.max(0, attempt - 1));
  return Math.round(base * (0.8 + Math.random() * 0.4));
}

/** What one send attempt came to. */
export type SendOutcome =
  /** Sent, failed for good, or nothing left to send (already sent, given up). */
  | { kind: "settled" }
  /** Another sender's claim is younger than SENDING_CLAIM_SECONDS: look again at `retryAt` (ms). */
  | { kind: "claimed"; retryAt: number }
  /** The platform said 429; the row is pending again. */
  | { kind: "rate_limited"; retryAfterMs: number }
  /** A failure worth retrying; the row is pending again. */
  | { kind: "failed"; error: Error };

/**
 * A ledger row its writer inserted already claimed (DeliveryInsert.claimed), as that writer knows
 * it: what a send needs, without reading or claiming the row again.
 */
export type ClaimedDelivery = Pick<DeliveryRow, "id" | "platform" | "session_id" | "inbox_id" | "target" | "text" | "possible_duplicate">;

/** A row to send now: its id (claimed first), or the row itself when its insert claimed it. */
export type DeliveryToSend = number | ClaimedDelivery;

/** One send attempt of a ledger row, under its claim: the same for a turn's inline send and a job. */
export class DeliverySender {
  constructor(private readonly deps: Pick<DeliveryDeps, "store" | "adapters" | "events" | "metrics" | "logger">) {}

  /** `lastAttempt`: a failure now is final (the row is marked failed instead of pending). */
  async attempt(delivery: DeliveryToSend, lastAttempt: boolean): Promise<SendOutcome> {
    if (typeof delivery !== "number") return this.send(delivery, lastAttempt);
    const { store } = this.deps;
    const row = await store.claimDelivery(delivery, { reclaimAfterSeconds: SENDING_CLAIM_SECONDS });
    if (row) return this.send(row, lastAttempt);
    const current = await store.getDelivery(delivery);
    if (current?.status !== "sending") return { kind: "settled" }; // already sent or given up
    return { kind: "claimed", retryAt: (current.updated_at + SENDING_CLAIM_SECONDS) * 1000 + 50 };
  }

  /** Sends a row this sender holds the claim of, and records what came of it. */
  private async send(row: ClaimedDelivery, lastAttempt: boolean): Promise<SendOutcome> {
    const { store, adapters, metrics, logger, events } = this.deps;
    const adapter = adapters.get(row.platform);
    if (!adapter) {
      await store.markDeliveryFailed(row.id, `no adapter for platform ${row.platform}`, true);
      metrics.deliveries.inc({ platform: row.platform, result: "failed" });
      return { kind: "settled" };
    }
    try {
      const sent = await adapter.send({ deliveryId: row.id, sessionId: row.session_id, target: row.target, text: row.text, possibleDuplicate: row.possible_duplicate });
      await store.markDeliverySent(row.id, sent.platformMessageId);
      metrics.deliveries.inc({ platform: row.platform, result: "sent" });
      void events
        .publish(row.session_id, "reply.delivered", { delivery_id: row.id, inbox_id: row.inbox_id, platform: row.platform, platform_message_id: sent.platformMessageId, possible_duplicate: row.possible_duplicate })
        .catch(() => undefined);
      return { kind: "settled" };
    } catch (err) {
      if (err instanceof RateLimitedError) {
        // Not counted as a failure: the retry waits out the platform's Retry-After exactly.
        await store.markDeliveryFailed(row.id, err.message, false);
        metrics.deliveries.inc({ platform: row.platform, result: "rate_limited" });
        logger.info({ deliveryId: row.id, retryAfterMs: err.retryAfterMs }, "delivery rate limited");
        return { kind: "rate_limited", retryAfterMs: err.retryAfterMs };
      }
      const final = err instanceof PermanentSendError || lastAttempt;
      await store.markDeliveryFailed(row.id, (err as Error).message, final);
      metrics.deliveries.inc({ platform: row.platform, result: final ? "failed" : "retry" });
      logger.warn({ deliveryId: row.id, platform: row.platform, err: (err as Error).message, final }, "delivery failed");
      return final ? { kind: "settled" } : { kind: "failed", error: err as Error };
    }
  }
}

export class DeliveryDispatcher {
  private readonly sender: DeliverySender;

  constructor(private readonly deps: DeliveryDeps) {
    this.sender = new DeliverySender(deps);
  }

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
    for (const deliveryId of ids) await this.enqueueJob(deliveryId, 0);
  }

  /**
   * Send a turn's ledger rows now, in this process, each under its claim (taken now, or by the
   * row's insert); a row whose attempt failed, met a 429 or is claimed by another sender goes to
   * the deliveries queue, delayed until its retry is due. Throws only when that enqueue fails
   * (the reconciler then finds the row).
   */
  async deliverNow(deliveries: readonly DeliveryToSend[]): Promise<void> {
    let enqueueError: unknown = null;
    for (const delivery of deliveries) {
      const deliveryId = typeof delivery === "number" ? delivery : delivery.id;
      // A store error mid-attempt is a failed attempt too: the job retries it (a row left in
      // 'sending' is taken again once its claim is old enough, as a possible duplicate).
      const outcome = await this.sender.attempt(delivery, false).catch((error: unknown): SendOutcome => ({ kind: "failed", error: error as Error }));
      if (outcome.kind === "settled") continue;
      const delayMs =
        outcome.kind === "rate_limited" ? outcome.retryAfterMs : outcome.kind === "claimed" ? Math.max(0, outcome.retryAt - Date.now()) : deliveryBackoffMs(1);
      // The other rows are still tried: one refused enqueue must not hold them back.
      await this.enqueueJob(deliveryId, delayMs).catch((err: unknown) => (enqueueError ??= err));
    }
    if (enqueueError) throw enqueueError;
  }

  private async enqueueJob(deliveryId: number, delayMs: number): Promise<void> {
    const options = delayMs > 0 ? { jobId: deliveryJobId(deliveryId), delay: delayMs } : { jobId: deliveryJobId(deliveryId) };
    await withTimeout(this.deps.queues.deliveries.add("deliver", { deliveryId }, options), ENQUEUE_TIMEOUT_MS, "enqueue delivery");
  }
}

export class DeliveryWorkers {
  private worker: Worker<DeliveryJobData> | null = null;
  private readonly sender: DeliverySender;

  constructor(private readonly deps: DeliveryDeps) {
    this.sender = new DeliverySender(deps);
  }

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
    if (this.worker && !(await closeWorker(this.worker, DELIVERY_WORKER_CLOSE_MS))) this.deps.logger.warn("the deliveries queue's worker did not close in time; left to disconnect");
    this.worker = null;
  }

  private async process(job: Job<DeliveryJobData>, token: string | undefined): Promise<void> {
    const outcome = await this.sender.attempt(job.data.deliveryId, job.attemptsMade + 1 >= MAX_ATTEMPTS);
    switch (outcome.kind) {
      case "settled":
        return;
      case "failed":
        throw outcome.error;
      case "rate_limited":
        // Honour the platform's Retry-After exactly: park the job until then (not counted as a failure).
        return this.parkUntil(job, token, Date.now() + outcome.retryAfterMs, new Error("rate limited"));
      case "claimed":
        // Another sender may be sending it now: look again once its claim is old enough.
        return this.parkUntil(job, token, outcome.retryAt, new Error(`delivery ${job.data.deliveryId} is being sent by another sender`));
    }
  }

  private async parkUntil(job: Job<DeliveryJobData>, token: string | undefined, at: number, otherwise: Error): Promise<never> {
    if (!token) throw otherwise; // without a lock token the job cannot be moved; the queue's backoff retries it
    await job.moveToDelayed(at, token);
    throw new DelayedError();
  }
}
