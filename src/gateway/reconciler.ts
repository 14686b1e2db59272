// The reconciler enqueues what the database says is unfinished: pending inbox rows (Redis was
// down at ingress, or lost its jobs on a restart) and unsent deliveries. It runs at start-up,
// whenever the Redis connection becomes ready again, and on a slow timer as a safety net.
// Re-adding is safe: job ids derive from rows, and a job for a consumed row is a no-op.
import type { Logger } from "pino";
import type { DeliveryStore, InboxStore } from "../state/types.js";
import type { DeliveryDispatcher } from "./delivery-worker.js";
import type { Ingress } from "./ingress.js";
import { PeriodicPass } from "./periodic-pass.js";
import type { GatewayQueues } from "./queues.js";

/** Rows re-enqueued per Redis round trip. */
const BATCH = 500;

export interface ReconcilerDeps {
  store: InboxStore & DeliveryStore;
  queues: GatewayQueues;
  ingress: Ingress;
  deliveries: DeliveryDispatcher;
  logger: Logger;
  intervalMs?: number;
}

export class Reconciler {
  private readonly passes = new PeriodicPass(() => this.pass());
  private readonly onReady = (): void => void this.runOnce();

  constructor(private readonly deps: ReconcilerDeps) {}

  start(): void {
    this.deps.queues.connection.on("ready", this.onReady);
    this.passes.start(this.deps.intervalMs ?? 30_000);
    void this.runOnce();
  }

  stop(): void {
    this.deps.queues.connection.off("ready", this.onReady);
    this.passes.stop();
  }

  /** One pass; concurrent calls share the pass in flight. Returns how many rows were enqueued. */
  runOnce(): Promise<number> {
    return this.passes.runOnce();
  }

  private async pass(): Promise<number> {
    const { store, ingress, deliveries, logger, queues } = this.deps;
    if (queues.connection.status !== "ready") return 0;
    let count = 0;
    try {
      const pending = await store.listPendingInbox(10_000);
      // In batches: one round trip per batch, however long the backlog.
      for (let i = 0; i < pending.length; i += BATCH) {
        const batch = pending.slice(i, i + BATCH);
        await ingress.enqueueMany(batch.map((row) => ({ conversationId: row.session_id, inboxId: row.id })));
        await store.markInboxEnqueued(batch.map((r) => r.id));
        count += batch.length;
      }
      const unsent = await store.listUnsentDeliveries(10_000);
      await deliveries.enqueue(unsent);
      count += unsent.length;
      if (count > 0) logger.info({ inbox: pending.length, deliveries: unsent.length }, "reconciler enqueued unfinished work");
    } catch (err) {
      logger.warn({ err: (err as Error).message }, "reconciler pass failed; will retry");
    }
    return count;
  }
}
