// The threads of one process that write the same SQLite file (serve: the HTTP ingress on the main
// thread, the turns in the workers thread) take turns at a lock in shared memory around their
// write transactions. Without it they meet SQLITE_BUSY from each other, and with busy_timeout 0
// each collision becomes an asynchronous retry on a timer (1 ms, then 2, 4, 8... and later still
// on a busy event loop) in the middle of an HTTP ack. With it a writer waits only while the other
// thread runs its (synchronous, short) transaction and is woken when it ends; holdAsync() waits
// without blocking the event loop. Other processes on the same file still meet SQLITE_BUSY and
// retry (busy-retry.ts): the gate is a shortcut, SQLite's own lock stays what keeps writes apart.
//
// The gate also counts the threads waiting for it, so a holder running a batch of many writes
// (the turns' thread) can end its transaction early and let a waiter in (write-batches.ts): the
// HTTP thread's insert waits for one write of a pass, not the whole pass.
//
// A waiter woken by a release takes the gate only once its event loop runs the wait's
// continuation; in a flood of requests that is after the pass that reads them, and a thread
// writing back to back has taken the gate again by then, release after release, until the
// take-over time. So a waiter that does not give way (the HTTP thread), still out after a few
// milliseconds of lost races, leaves its mark as the gate's next holder, and the next release
// hands the gate straight to it. Not sooner: a gate handed to a thread that is waiting for a core
// stays idle until it runs, and the turns' writes wait with it.
import { getEnvironmentData, setEnvironmentData, threadId } from "node:worker_threads";

const KEY_PREFIX = "switchboard.sqlite-write-gate:";
/** Past this, the holder is taken for gone (a terminated thread cannot release) and the gate is taken over. */
export const DEFAULT_STEAL_AFTER_MS = 1_000;
const FREE = 0;
/** The cell's slots: who holds the gate, how many wait for it, how many got in after waiting, who gets it next. */
const HOLDER = 0;
const WAITING = 1;
const ENTERED = 2;
const NEXT = 3;
const CELLS = 4;
/** A waiter that has lost the race for the gate this long asks to be handed it (see above). */
const HAND_OVER_AFTER_MS = 5;
/** A batch that gave way waits at most this long for the waiters to have been in. */
const GIVE_WAY_MAX_MS = 5;
/**
 * Waiters that did not come in time are not given way to for this long: a count left behind by a
 * thread that ended while it waited would otherwise cut every batch short.
 */
const UNHEEDED_WAITERS_MS = 100;

type WaitAsync = (
  cell: Int32Array,
  index: number,
  value: number,
  timeoutMs: number,
) => { async: false; value: "not-equal" | "timed-out" } | { async: true; value: Promise<"ok" | "timed-out"> };
/** Atomics.waitAsync (ES2024; Node 16+), typed here since the project's lib is ES2023. */
const waitAsync = (Atomics as unknown as { waitAsync?: WaitAsync }).waitAsync;

const counted = { waits: 0, waitedMs: 0 };

/** This thread lets others have the gate first (it never asks for a hand-over): serve's workers thread. */
let givesWay = false;
/** Work running under a gate in this thread (a gate found held by this thread outside it was handed over). */
let holdingDepth = 0;

/** This thread does not ask for the gate to be handed to it (it is the one that gives way). */
export function setGivesWay(value: boolean): void {
  givesWay = value;
}

/** How often this thread found a write gate held since it started, and how long it waited (for /metrics). */
export function writeGateStats(): { waits: number; waitedMs: number } {
  return { ...counted };
}

export class WriteGate {
  /** This thread's mark in the cell: never FREE (thread ids start at 0). */
  private readonly me = threadId + 1;
  /** Until then othersWaiting() says no (see UNHEEDED_WAITERS_MS). */
  private heedWaitersFrom = 0;

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
    const shared = new SharedArrayBuffer(CELLS * Int32Array.BYTES_PER_ELEMENT);
    setEnvironmentData(key, shared);
    return new WriteGate(new Int32Array(shared), stealAfterMs);
  }

  /** The shared cell, for a thread that takes the gate the same way on its own (wal-checkpointer.ts). */
  get shared(): SharedArrayBuffer {
    return this.cell.buffer as SharedArrayBuffer;
  }

  /** A gate nobody else shares (an in-memory database). */
  static private(): WriteGate {
    return new WriteGate(new Int32Array(new SharedArrayBuffer(CELLS * Int32Array.BYTES_PER_ELEMENT)), DEFAULT_STEAL_AFTER_MS);
  }

  /** Some other thread is waiting for the gate (the holder's cue to end its batch early). */
  othersWaiting(): boolean {
    return Atomics.load(this.cell, WAITING) > 0 && performance.now() >= this.heedWaitersFrom;
  }

  /** Resolves once a waiting thread has taken the gate, or none waits (or after a few ms, whatever they do). */
  async afterWaiters(): Promise<void> {
    const until = performance.now() + GIVE_WAY_MAX_MS;
    const entered = Atomics.load(this.cell, ENTERED);
    for (;;) {
      if (Atomics.load(this.cell, WAITING) === 0 || !waitAsync) return;
      const now = Atomics.load(this.cell, ENTERED);
      if (now !== entered) return;
      const left = until - performance.now();
      if (left <= 0) {
        this.heedWaitersFrom = performance.now() + UNHEEDED_WAITERS_MS;
        return;
      }
      const wait = waitAsync(this.cell, ENTERED, now, left);
      if (wait.async) await wait.value;
    }
  }

  /** Run a synchronous write holding the gate. Nested calls in this thread run straight through. */
  hold<T>(work: () => T): T {
    const taken = this.take();
    holdingDepth += 1;
    try {
      return work();
    } finally {
      holdingDepth -= 1;
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
      const holder = Atomics.compareExchange(this.cell, HOLDER, FREE, this.me);
      // Held by this thread outside any work of its own: a release handed it over.
      const handedOver = holder === this.me && holdingDepth === 0;
      if (holder === FREE || handedOver) {
        if (started !== 0) this.waited(started);
        return this.runAndRelease(work);
      }
      if (holder === this.me || !waitAsync) {
        if (started !== 0) this.waited(started);
        return this.hold(work);
      }
      // Woken by releases and still not in (another thread took the gate first each time, while
      // this thread's event loop was busy): be handed the gate at the next release.
      if (started === 0) started = this.startWaiting();
      else if (!givesWay && performance.now() - started >= HAND_OVER_AFTER_MS) Atomics.compareExchange(this.cell, NEXT, FREE, this.me);
      const left = this.stealAfterMs - (performance.now() - started);
      const waiting = left > 0 ? waitAsync(this.cell, HOLDER, holder, left) : null;
      const outcome = waiting === null ? "timed-out" : waiting.async ? await waiting.value : waiting.value;
      if (outcome !== "timed-out") continue;
      if (Atomics.compareExchange(this.cell, HOLDER, holder, this.me) === holder) {
        this.waited(started);
        return this.runAndRelease(work);
      }
    }
  }

  private runAndRelease<T>(work: () => T): T {
    // Taken: a mark of this thread as the next holder is spent.
    Atomics.compareExchange(this.cell, NEXT, this.me, FREE);
    holdingDepth += 1;
    try {
      return work();
    } finally {
      holdingDepth -= 1;
      this.release();
    }
  }

  /** True when this call took the gate (and must release it); false when this thread already held it. */
  private take(): boolean {
    let started = 0;
    for (;;) {
      const holder = Atomics.compareExchange(this.cell, HOLDER, FREE, this.me);
      if (holder === FREE) break;
      if (holder === this.me) {
        if (holdingDepth > 0) return false;
        // Handed over for a write of this thread still waiting asynchronously: this one goes first.
        Atomics.compareExchange(this.cell, NEXT, this.me, FREE);
        break;
      }
      if (started === 0) started = this.startWaiting();
      const left = this.stealAfterMs - (performance.now() - started);
      // Sleeps until the holder's release() notifies, or the cell changes under it.
      if (left > 0 && Atomics.wait(this.cell, HOLDER, holder, left) !== "timed-out") continue;
      if (Atomics.compareExchange(this.cell, HOLDER, holder, this.me) === holder) break;
    }
    if (started !== 0) this.waited(started);
    return true;
  }

  private startWaiting(): number {
    counted.waits += 1;
    Atomics.add(this.cell, WAITING, 1);
    return performance.now();
  }

  /** This thread holds the gate after waiting: one waiter fewer (a holder that gave way is told). */
  private waited(started: number): void {
    counted.waitedMs += performance.now() - started;
    Atomics.sub(this.cell, WAITING, 1);
    Atomics.add(this.cell, ENTERED, 1);
    Atomics.notify(this.cell, ENTERED);
  }

  private release(): void {
    // Straight to the thread waiting to be next, when there is one; else free for whoever comes.
    // Only our own mark is replaced: a gate taken over from us stays with its new holder.
    const next = Atomics.load(this.cell, NEXT);
    const to = next !== FREE && next !== this.me ? next : FREE;
    if (Atomics.compareExchange(this.cell, HOLDER, this.me, to) !== this.me) return;
    if (to !== FREE) Atomics.compareExchange(this.cell, NEXT, to, FREE);
    // Every waiter: several writes of one thread may be waiting asynchronously.
    Atomics.notify(this.cell, HOLDER);
  }
}
