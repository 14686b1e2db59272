// Group commit: calls that arrive while a batch is being gathered or written share the next
// batch (one transaction, one round trip). Each caller still gets its own result, and only once
// the batch that holds its item has been written.
//
// A caller that does some reading before it has its item takes a slot first (reserve()): a batch
// ready to go waits for the slots taken before it (up to maxWaitMs), so calls that started
// together are written together even when their reads finish one by one (PostgreSQL).
//
// A batch goes at the end of the event loop's pass, or sooner once its first item has waited
// flushAfterMs: a pass that reads a flood of requests (200 new conversations at once) can take
// tens of milliseconds, and its first callers are answered within it instead of after it.

import { without } from "../shared/bench-without.js";

export type Settled<T> = { ok: true; value: T } | { ok: false; error: Error };

export interface GroupCommitOptions {
  /** At most this many items per batch; the rest go into the next one. */
  maxBatch?: number;
  /** How long a batch waits for reserved slots to bring their items. */
  maxWaitMs?: number;
  /** A batch whose first item has waited this long within one pass goes at the next submit. */
  flushAfterMs?: number;
}

/** A place in an upcoming batch: submit the item, or release the place without one. */
export interface Slot<I, O> {
  submit(item: I): Promise<O>;
  release(): void;
}

interface Waiting<I, O> {
  item: I;
  resolve: (value: O) => void;
  reject: (error: Error) => void;
}

const DEFAULT_MAX_BATCH = 256;
const DEFAULT_MAX_WAIT_MS = 2;
export const DEFAULT_FLUSH_AFTER_MS = 4;

export class GroupCommit<I, O> {
  private queue: Array<Waiting<I, O>> = [];
  private draining = false;
  /** A drain is scheduled for the end of this pass. */
  private scheduled = false;
  /** When the first item of the batch being gathered came (null: none is). */
  private gatheringSince: number | null = null;
  private reserved = 0;
  private onSlotsFree: (() => void) | null = null;
  private readonly maxBatch: number;
  private readonly maxWaitMs: number;
  private readonly flushAfterMs: number;

  /** `commit` answers every item of a batch, in order; when it throws, every item gets the error. */
  constructor(
    private readonly commit: (items: I[]) => Promise<Array<Settled<O>>>,
    options: GroupCommitOptions = {},
  ) {
    this.maxBatch = without("group-commit") ? 1 : Math.max(1, options.maxBatch ?? DEFAULT_MAX_BATCH);
    this.maxWaitMs = Math.max(0, options.maxWaitMs ?? DEFAULT_MAX_WAIT_MS);
    this.flushAfterMs = Math.max(0, options.flushAfterMs ?? DEFAULT_FLUSH_AFTER_MS);
  }

  /** Take a slot now, bring the item later; release() when there is none (idempotent, and implied by submit). */
  reserve(): Slot<I, O> {
    this.reserved += 1;
    let held = true;
    const release = (): void => {
      if (!held) return;
      held = false;
      this.reserved -= 1;
      if (this.reserved === 0) this.onSlotsFree?.();
    };
    return {
      submit: (item) => {
        const result = this.submit(item);
        release();
        return result;
      },
      release,
    };
  }

  submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      // Items that arrive while a batch is written wait for the next one: a busy path writes in bigger batches.
      if (this.draining) return;
      const now = performance.now();
      if (this.gatheringSince === null) this.gatheringSince = now;
      if (now - this.gatheringSince >= this.flushAfterMs) {
        void this.drain(false);
      } else if (!this.scheduled) {
        this.scheduled = true;
        // After this turn of the event loop: the calls it started (and their awaited reads) join in.
        setImmediate(() => {
          this.scheduled = false;
          if (!this.draining && this.queue.length > 0) void this.drain(true);
        });
      }
    });
  }

  /** `waitForSlots`: at the end of a pass; a batch sent within a long pass does not wait for its reads. */
  private async drain(waitForSlots: boolean): Promise<void> {
    this.draining = true;
    this.gatheringSince = null;
    try {
      while (this.queue.length > 0) {
        if (waitForSlots) await this.slotsFilled();
        waitForSlots = true;
        const batch = this.queue.splice(0, this.maxBatch);
        let results: Array<Settled<O>>;
        try {
          results = await this.commit(batch.map((waiting) => waiting.item));
        } catch (err) {
          const error = err instanceof Error ? err : new Error(String(err));
          for (const waiting of batch) waiting.reject(error);
          continue;
        }
        batch.forEach((waiting, index) => {
          const result = results[index];
          if (!result) waiting.reject(new Error("group commit: no result for an item"));
          else if (result.ok) waiting.resolve(result.value);
          else waiting.reject(result.error);
        });
      }
    } finally {
      this.draining = false;
    }
  }

  /** Resolves once no slot is reserved, or after maxWaitMs. */
  private slotsFilled(): Promise<void> {
    if (this.reserved === 0 || this.maxWaitMs === 0 || this.queue.length >= this.maxBatch) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.onSlotsFree = null;
        resolve();
      };
      const timer = setTimeout(done, this.maxWaitMs);
      this.onSlotsFree = done;
    });
  }
}
