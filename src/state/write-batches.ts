// Group commit for one SQLite connection's writes. Under load most of a write's cost is its
// commit (the WAL frames of every page it touched, the locks, the syscalls), and the turns of
// different conversations write at the same moments: a lease release, a delivery's mark, a
// turn's flush. So the writes asked for during one pass of the event loop run together in one
// BEGIN IMMEDIATE ... COMMIT, each in a savepoint of its own: a write that fails is rolled back
// alone and its caller gets its error; the others commit. Every caller is answered only after
// the commit that holds its write. A lone write runs as before, without a savepoint.
import type { Database } from "better-sqlite3";
import { isSqliteBusy } from "./busy-retry.js";

interface QueuedWrite {
  work: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/** Runs one synchronous step with the connection's write lock (the gate, the busy retries). */
export type RunLocked = <T>(step: () => T) => Promise<T>;

export class WriteBatches {
  private queued: QueuedWrite[] = [];
  private readonly inOneTransaction: (writes: readonly QueuedWrite[]) => Outcome[];
  private readonly inSavepoint: (work: () => unknown) => unknown;

  constructor(
    db: Database,
    private readonly runLocked: RunLocked,
  ) {
    // Inside the batch's transaction better-sqlite3 runs a nested transaction as a savepoint.
    const savepoint = db.transaction((work: () => unknown) => work());
    this.inSavepoint = (work) => savepoint(work);
    const batch = db.transaction((writes: readonly QueuedWrite[]) => writes.map((write) => this.attempt(write)));
    this.inOneTransaction = (writes) => batch.immediate(writes);
  }

  /** Queue a synchronous write; it runs (and commits) at the end of this pass of the event loop. */
  write<T>(work: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queued.push({ work, resolve: resolve as (value: unknown) => void, reject });
      if (this.queued.length === 1) setImmediate(() => void this.runQueued());
    });
  }

  private async runQueued(): Promise<void> {
    const writes = this.queued;
    this.queued = [];
    if (writes.length === 1) {
      const [only] = writes;
      await this.runLocked(only.work).then(only.resolve, only.reject);
      return;
    }
    let outcomes: Outcome[];
    try {
      outcomes = await this.runLocked(() => this.inOneTransaction(writes));
    } catch (err) {
      // BEGIN or COMMIT failed (or the store closed): nothing of the batch was written.
      for (const write of writes) write.reject(err);
      return;
    }
    outcomes.forEach((outcome, i) => (outcome.ok ? writes[i].resolve(outcome.value) : writes[i].reject(outcome.error)));
  }

  private attempt(write: QueuedWrite): Outcome {
    try {
      return { ok: true, value: this.inSavepoint(write.work) };
    } catch (err) {
      // Busy inside a held write lock means another connection got in: retry the whole batch.
      if (isSqliteBusy(err)) throw err;
      return { ok: false, error: err };
    }
  }
}
