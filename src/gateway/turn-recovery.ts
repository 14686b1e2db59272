// Turns whose worker died are redone without waiting for the dead worker's queue job. That job
// stays "active" in BullMQ until its lock lapses and a stall check runs (lockDuration +
// stalledInterval: about 20 s), and the conversation's later messages do not help: their jobs
// returned at once while the turn was live, since a live turn drains its inbox. The lease tells
// more, and sooner: its holder names a pid and a host. So every process with workers looks at the
// leases on a short timer; a lease whose holder is provably dead (this host, pid gone) or whose
// time ran out (any host) while its conversation has pending messages gets a fresh wake-up job
// for the head of that inbox, and is then reaped. The dead worker's own job, once BullMQ hands it
// out again, finds its row answered and completes as a no-op.
import type { Logger } from "pino";
import type { SessionStore, StaleLease } from "../state/types.js";
import type { GatewayMetrics } from "./metrics.js";
import { PeriodicPass } from "./periodic-pass.js";
import { recoveryJobId, withTimeout, type GatewayQueues } from "./queues.js";

/** How long adding one wake-up may take before the pass gives up on it (the next pass retries). */
const ENQUEUE_TIMEOUT_MS = 2_000;

export interface TurnRecoveryDeps {
  store: SessionStore;
  queues: GatewayQueues;
  metrics: GatewayMetrics;
  logger: Logger;
  /** Time between two looks at the leases. */
  intervalMs: number;
}

export class TurnRecovery {
  private readonly passes = new PeriodicPass(() => this.pass());

  constructor(private readonly deps: TurnRecoveryDeps) {}

  start(): void {
    this.passes.start(this.deps.intervalMs);
  }

  stop(): void {
    this.passes.stop();
  }

  /** One pass; concurrent calls share the pass in flight. Returns how many turns were woken. */
  runOnce(): Promise<number> {
    return this.passes.runOnce();
  }

  private async pass(): Promise<number> {
    // With Redis down nothing can be enqueued; the leases wait for the next pass.
    if (this.deps.queues.connection.status !== "ready") return 0;
    let woken = 0;
    try {
      for (const lease of await this.deps.store.staleSessionTurnLeases()) {
        if (await this.recover(lease).catch((err: Error) => this.failed(lease, err))) woken++;
      }
    } catch (err) {
      this.deps.logger.warn({ err: (err as Error).message }, "turn recovery pass failed; will retry");
    }
    return woken;
  }

  /** Wake a worker for the conversation's head, then reap the lease. True when a turn was woken. */
  private async recover(lease: StaleLease): Promise<boolean> {
    const { store, queues, metrics, logger } = this.deps;
    const [head] = await store.pendingInbox(lease.conversationId, 1);
    // Nothing left to redo: an expired lease then stays for an acquire to take (its holder may be
    // a slow live process); a dead process's lease is only tidied away.
    if (!head && lease.reason === "expired") return false;
    if (head) {
      const job = { conversationId: lease.conversationId, inboxId: head.id };
      // Added before the reap: a failed add leaves the lease, so the next pass tries again.
      await withTimeout(queues.turns.add("turn", job, { jobId: recoveryJobId(head.id, lease.holder) }), ENQUEUE_TIMEOUT_MS, "enqueue a recovery wake-up");
    }
    const reaped = await store.reapSessionTurnLease(lease.conversationId, lease.holder);
    if (reaped) {
      metrics.staleLeasesReaped.inc({ reason: lease.reason });
      logger.info({ conversationId: lease.conversationId, holder: lease.holder, reason: lease.reason, inboxId: head?.id ?? null }, "reaped a stale turn lease");
    }
    return head !== undefined;
  }

  private failed(lease: StaleLease, err: Error): false {
    this.deps.logger.warn({ conversationId: lease.conversationId, err: err.message }, "could not recover a stale turn lease; will retry");
    return false;
  }
}
