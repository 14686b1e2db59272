// Turns whose worker died are redone without waiting for the dead worker's queue job. That job
// stays "active" in BullMQ until its lock lapses and a stall check runs (lockDuration +
// stalledInterval: about 20 s), and the conversation's later messages do not help: their jobs
// returned at once while the turn was live, since a live turn drains its inbox. The lease tells
// more, and sooner: its holder names a pid and a host. So every process with workers looks at the
// leases on a short timer; a lease whose holder is provably dead (this host, pid gone) or whose
// time ran out (any host) while its conversation has pending messages gets a fresh wake-up job
// for the head of that inbox, and is then reaped. The dead worker's own job, once BullMQ hands it
// out again, finds its row answered and completes as a no-op.
//
// A message can also be left with no lease at all: its wake-up was handed over in memory
// (local-wake-ups.ts) to a process that died before the turn began. The same pass wakes the
// oldest pending row of every conversation nobody holds once that row is a lease TTL old: the
// time a dead holder's turn would have waited too.
import type { Logger } from "pino";
import type { SessionStore, StaleLease } from "../state/types.js";
import type { GatewayMetrics } from "./metrics.js";
import { PeriodicPass } from "./periodic-pass.js";
import { recoveryJobId, turnJobId, withTimeout, type GatewayQueues } from "./queues.js";

/** How long adding one wake-up may take before the pass gives up on it (the next pass retries). */
const ENQUEUE_TIMEOUT_MS = 2_000;

export interface TurnRecoveryDeps {
  store: SessionStore;
  queues: GatewayQueues;
  metrics: GatewayMetrics;
  logger: Logger;
  /** Time between two looks at the leases. */
  intervalMs: number;
  /** A pending row no lease covers gets a wake-up job once it is this old (the lease TTL). */
  unclaimedAfterSeconds: number;
}

/** Unclaimed conversations woken per pass. */
const UNCLAIMED_PER_PASS = 500;

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
      woken += await this.wakeUnclaimed();
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

  /**
   * One wake-up job per conversation whose head nobody took. Its id is the row's own: a job still
   * waiting for it (a queued wake-up, or the reconciler's) makes the add a no-op.
   */
  private async wakeUnclaimed(): Promise<number> {
    const { store, queues, logger } = this.deps;
    const heads = await store.unclaimedPendingHeads(this.deps.unclaimedAfterSeconds, UNCLAIMED_PER_PASS);
    if (heads.length === 0) return 0;
    const jobs = heads.map((head) => ({ name: "turn", data: head, opts: { jobId: turnJobId(head.inboxId) } }));
    await withTimeout(queues.turns.addBulk(jobs), ENQUEUE_TIMEOUT_MS, "enqueue wake-ups of unclaimed rows");
    logger.info({ conversations: heads.length, inboxIds: heads.map((h) => h.inboxId).slice(0, 20) }, "woke conversations whose pending messages nobody had taken");
    return heads.length;
  }

  private failed(lease: StaleLease, err: Error): false {
    this.deps.logger.warn({ conversationId: lease.conversationId, err: err.message }, "could not recover a stale turn lease; will retry");
    return false;
  }
}
