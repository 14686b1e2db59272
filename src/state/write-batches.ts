// Group commit for one SQLite connection's writes. Under load most of a write's cost is its
// commit (the WAL frames of every page it touched, the locks, the syscalls), and the turns of
// different conversations write at the same moments: a lease release, a delivery's mark, a
// turn's flush. So the writes asked for during one pass of the event loop run together in one
// BEGIN IMMEDIATE ... COMMIT, each in a savepoint of its own: a write that fails is rolled back
// alone and its caller gets its error; the others commit. Every caller is answered only after
// the commit that holds its write. A lone write runs as before, without a savepoint.
//
// Another process holding the database's write lock (SQLITE_BUSY) makes the batch wait and try
// again, up to a deadline; a write queued with `busy: "report"` (a lease attempt, which has a
// wait loop of its own) leaves the batch with the busy error instead.
import type { Database } from "better-sqlite3";
import { isSqliteBusy, retryWhileBusy } from "./busy-retry.js";
import { without } from "../shared/bench-without.js";

export interface WriteOptions {
  /** "retry" (default): wait out another writer; "report": reject with the busy error at once. */
  busy?: "retry" | "report";
  /**
   * The work is a transaction of its own (better-sqlite3's db.transaction): inside a batch it
   * runs as a savepoint already, and needs no second one around it.
   */
  atomic?: boolean;
  /**
   * The work is a batch its caller already gathered (the ingress's group commit): it runs at once,
   * with whatever was queued before it, instead of at the end of this pass of the event loop. In
   * a pass that reads a flood of requests that end is the next pass, a whole pass of reading later.
   */
  now?: boolean;
}

interface QueuedWrite {
  work: () => unknown;
  retriesBusy: boolean;
  atomic: boolean;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/** Runs one synchronous step holding the connection's write gate (a busy error propagates). */
export type RunLocked = <T>(step: () => T) => Promise<T>;

/**
 * The write gate's word on other threads (write-gate.ts): a batch that finds another thread
 * waiting ends after its current write and commits what it has, and the rest runs once the
 * waiting thread has had its turn. The HTTP thread's inserts then wait for one of the turns'
 * writes, not for a whole pass of them.
 */
export interface GateTurns {
  othersWaiting(): boolean;
  afterWaiters(): Promise<void>;
}

const NO_OTHERS: GateTurns = { othersWaiting: () => false, afterWaiters: () => Promise.resolve() };

export class WriteBatches {
  private queued: QueuedWrite[] = [];
  /** A batch gave way to another thread: its rest (at the queue's front) runs after that thread's turn. */
  private yielded = false;
  private readonly inOneTransaction: (writes: readonly QueuedWrite[]) => Outcome[];

  constructor(
    db: Database,
    private readonly runLocked: RunLocked,
    private readonly busyDeadlineMs: number,
    private readonly gate: GateTurns = NO_OTHERS,
  ) {
    // Inside the batch's transaction better-sqlite3 runs a nested transaction as a savepoint.
    const savepoint = db.transaction((work: () => unknown) => work());
    // Outcomes of a prefix of the writes: the batch ends early when another thread waits for the gate.
    const batch = db.transaction((writes: readonly QueuedWrite[]) => {
      const outcomes: Outcome[] = [];
      for (const write of writes) {
        outcomes.push(outcomeOf(write.atomic ? write.work : () => savepoint(write.work)));
        if (outcomes.length < writes.length && this.gate.othersWaiting()) break;
      }
      return outcomes;
    });
    this.inOneTransaction = (writes) => batch.immediate(writes);
  }

  /** Queue a synchronous write; it runs (and commits) at the end of this pass of the event loop. */
  write<T>(work: () => T, options: WriteOptions = {}): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queued.push({ work, retriesBusy: options.busy !== "report", atomic: options.atomic === true, resolve: resolve as (value: unknown) => void, reject });
      if (options.now === true) void this.runQueued();
      else if (this.queued.length === 1) setImmediate(() => void this.runQueued());
    });
  }

  private async runQueued(): Promise<void> {
    let writes = this.queued;
    // A write run at once took the queue along, before this pass's scheduled run came; or a
    // batch gave way, and its resumption runs the queue.
    if (writes.length === 0 || this.yielded) return;
    this.queued = [];
    const settle = (outcomes: Outcome[]) => {
      outcomes.forEach((o, i) => (o.ok ? writes[i].resolve(o.value) : writes[i].reject(o.error)));
      if (outcomes.length < writes.length) this.resumeAfterWaiters(writes.slice(outcomes.length));
    };
    const failAll = (err: unknown) => writes.forEach((write) => write.reject(err));
    await retryWhileBusy(async () => {
      try {
        settle(await this.runLocked(() => this.runBatch(writes)));
      } catch (err) {
        // BEGIN or COMMIT failed (or the store closed): nothing of the batch was written.
        if (!isSqliteBusy(err)) return failAll(err);
        for (const write of writes) if (!write.retriesBusy) write.reject(err);
        writes = writes.filter((write) => write.retriesBusy);
        if (writes.length > 0) throw err;
      }
    }, this.busyDeadlineMs).catch(failAll);
  }

  /** The rest of a batch that gave way goes first once the waiting thread has been in. */
  private resumeAfterWaiters(rest: QueuedWrite[]): void {
    this.queued = [...rest, ...this.queued];
    this.yielded = true;
    void this.gate.afterWaiters().then(() => {
      this.yielded = false;
      return this.runQueued();
    });
  }

  /** A lone write runs as it is; several run in one transaction, a savepoint each (a prefix of them when it gives way). */
  private runBatch(writes: readonly QueuedWrite[]): Outcome[] {
    // Without group commit (a benchmark's comparison) each write is a prefix of one: its own transaction.
    return writes.length > 1 && !without("group-commit") ? this.inOneTransaction(writes) : [outcomeOf(writes[0].work)];
  }
}

/** One write's outcome; a busy error propagates, to retry (or report) the whole batch. */
function outcomeOf(run: () => unknown): Outcome {
  try {
    return { ok: true, value: run() };
  } catch (err) {
    if (isSqliteBusy(err)) throw err;
    return { ok: false, error: err };
  }
}
