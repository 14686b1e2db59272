// The threads of one process that write the same SQLite file (serve: the HTTP ingress on the main
// thread, the turns in the workers thread) take turns at a lock in shared memory around their
// write transactions. Without it they meet SQLITE_BUSY from each other, and with busy_timeout 0
// each collision becomes an asynchronous retry on a timer (1 ms, then 2, 4, 8... and later still
// on a busy event loop) in the middle of an HTTP ack. With it a writer waits only while the other
// thread runs its (synchronous, short) transaction and is woken when it ends; holdAsync() waits
// without blocking the event loop. Other processes on the same file still meet SQLITE_BUSY and
// retry (busy-retry.ts): the gate is a shortcut, SQLite's own lock stays what keeps writes apart.
import { getEnvironmentData, setEnvironmentData, threadId } from "node:worker_threads";

const KEY_PREFIX = "switchboard.sqlite-write-gate:";
/** Past this, the holder is taken for gone (a terminated thread cannot release) and the gate is taken over. */
export const DEFAULT_STEAL_AFTER_MS = 1_000;
const FREE = 0;

type WaitAsync = (
  cell: Int32Array,
  index: number,
  value: number,
  timeoutMs: number,
) => { async: false; value: "not-equal" | "timed-out" } | { async: true; value: Promise<"ok" | "timed-out"> };
/** Atomics.waitAsync (ES2024; Node 16+), typed here since the project's lib is ES2023. */
const waitAsync = (Atomics as unknown as { waitAsync?: WaitAsync }).waitAsync;

const counted = { waits: 0, waitedMs: 0 };

/** How often this thread found a write gate held since it started, and how long it waited (for /metrics). */
export function writeGateStats(): { waits: number; waitedMs: number } {
  return { ...counted };
}

export class WriteGate {
  /** This thread's mark in the cell: never FREE (thread ids start at 0). */
  private readonly me = threadId + 1;

  private constructor(
    private readonly cell: Int32Array,
    private readonly stealAfterMs: number,
  ) {}

  /**
   * The gate of this file for this process: the first opener creates it, and threads started
   * afterwards (worker_threads environment data) share it. A thread started before the file was
   * opened gets a gate of its own, which only means no shortcut between those two threads.
   */
  static forFile(fileKey: string, stealAfterMs = DEFAULT_STEAL_AFTER_MS): WriteGate {
    const key = KEY_PREFIX + fileKey;
    const inherited = getEnvironmentData(key);
    if (inherited instanceof SharedArrayBuffer) return new WriteGate(new Int32Array(inherited), stealAfterMs);
    const shared = new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT);
    setEnvironmentData(key, shared);
    return new WriteGate(new Int32Array(shared), stealAfterMs);
  }

  /** The shared cell, for a thread that takes the gate the same way on its own (wal-checkpointer.ts). */
  get shared(): SharedArrayBuffer {
    return this.cell.buffer as SharedArrayBuffer;
  }

  /** A gate nobody else shares (an in-memory database). */
  static private(): WriteGate {
    return new WriteGate(new Int32Array(new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT)), DEFAULT_STEAL_AFTER_MS);
  }

  /** Run a synchronous write holding the gate. Nested calls in this thread run straight through. */
  hold<T>(work: () => T): T {
    const taken = this.take();
    try {
      return work();
    } finally {
      if (taken) this.release();
    }
  }

  /**
   * hold() that waits for another thread's release without blocking this thread's event loop
   * (the HTTP thread keeps reading requests meanwhile); the work itself runs synchronously.
   */
  async holdAsync<T>(work: () => T): Promise<T> {
    let started = 0;
    for (;;) {
      const holder = Atomics.compareExchange(this.cell, 0, FREE, this.me);
      if (holder === FREE || holder === this.me || !waitAsync) {
        if (started !== 0) counted.waitedMs += performance.now() - started;
        return holder === FREE ? this.runAndRelease(work) : this.hold(work);
      }
      if (started === 0) {
        started = performance.now();
        counted.waits += 1;
      }
      const left = this.stealAfterMs - (performance.now() - started);
      const waiting = left > 0 ? waitAsync(this.cell, 0, holder, left) : null;
      const outcome = waiting === null ? "timed-out" : waiting.async ? await waiting.value : waiting.value;
      if (outcome !== "timed-out") continue;
      if (Atomics.compareExchange(this.cell, 0, holder, this.me) === holder) {
        counted.waitedMs += performance.now() - started;
        return this.runAndRelease(work);
      }
    }
  }

  private runAndRelease<T>(work: () => T): T {
    try {
      return work();
    } finally {
      this.release();
    }
  }

  /** True when this call took the gate (and must release it); false when this thread already held it. */
  private take(): boolean {
    let started = 0;
    for (;;) {
      const holder = Atomics.compareExchange(this.cell, 0, FREE, this.me);
      if (holder === FREE) break;
      if (holder === this.me) return false;
      if (started === 0) {
        started = performance.now();
        counted.waits += 1;
      }
      const left = this.stealAfterMs - (performance.now() - started);
      // Sleeps until the holder's release() notifies, or the cell changes under it.
      if (left > 0 && Atomics.wait(this.cell, 0, holder, left) !== "timed-out") continue;
      if (Atomics.compareExchange(this.cell, 0, holder, this.me) === holder) break;
    }
    if (started !== 0) counted.waitedMs += performance.now() - started;
    return true;
  }

  private release(): void {
    // Only our own mark is cleared: a gate taken over from us stays with its new holder.
    // Every waiter: several writes of one thread may be waiting asynchronously.
    if (Atomics.compareExchange(this.cell, 0, this.me, FREE) === this.me) Atomics.notify(this.cell, 0);
  }
}
