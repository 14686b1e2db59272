// In-process wake-ups: when the process (or its workers thread) that accepted a message also runs
// turns, the new row's wake-up is handed over in memory instead of as a BullMQ job (about thirty
// Redis commands per message). The inbox row is already durable, so nothing accepted depends on
// this queue: a wake-up lost with a dead process or thread is found again by the reconciler (at
// start-up and on its timer) and by turn recovery's sweep for pending rows nobody has taken.
//
// The same slots also run the BullMQ wake-ups (recovery, other processes' ingress), so the
// configured concurrency holds whichever way a wake-up came.
import type { QueuedNotice } from "./queued-notices.js";

export interface WakeUp {
  /** The conversation id of the inbox row (its session_id): the turn lease's key. */
  conversationId: string;
  inboxId: number;
  /**
   * The row's platform, when the sender knew it: the turn then goes straight for the lease, without
   * reading the row first (turn-worker.ts). Absent on wake-ups that only name the row.
   */
  platform?: string;
}

/**
 * Where ingress offers new rows' wake-ups; false: not taken (the caller announces the rows and
 * enqueues them in BullMQ). A sink that takes them publishes their `message.queued` notices first,
 * on the event bus of the thread that will run their turns (queued-notices.ts).
 */
export interface WakeUpSink {
  /** The announcer id ingress writes into the rows it records for this sink; null while there is none. */
  readonly announcer: string | null;
  offer(wakeUps: readonly WakeUp[], notices: readonly QueuedNotice[]): boolean;
}

interface Waiting {
  start: () => void;
  /** The row of an in-memory wake-up (for handOn's check); null for a BullMQ job waiting for a slot. */
  inboxId: number | null;
}

export class LocalWakeUps {
  private running = 0;
  private waiting: Waiting[] = [];
  /** Rows whose in-memory wake-up has not started yet (a queued wake-up will read their conversation). */
  private readonly notStarted = new Map<number, number>();
  private readonly inFlight = new Set<Promise<void>>();
  private open = true;

  /**
   * `run` does one wake-up (read the conversation's head under its lease, run the turn); when it
   * throws (a turn to retry later), `retryLater` gets the wake-up.
   */
  constructor(
    private readonly concurrency: number,
    private readonly run: (wakeUp: WakeUp) => Promise<void>,
    private readonly retryLater: (wakeUp: WakeUp, err: Error) => void,
  ) {}

  /** False once closing: offers are refused from then on. */
  get accepting(): boolean {
    return this.open;
  }

  offer(wakeUps: readonly WakeUp[]): boolean {
    if (!this.open) return false;
    for (const wakeUp of wakeUps) this.queue(wakeUp);
    return true;
  }

  /**
   * A finished turn's hand-on to its conversation's next row: nothing when that row's own wake-up
   * is still to start, else a fresh one at the back of the queue (behind other conversations').
   */
  handOn(wakeUp: WakeUp): boolean {
    if (!this.open) return false;
    if (!this.notStarted.has(wakeUp.inboxId)) this.queue(wakeUp);
    return true;
  }

  /** Run `fn` in one of the slots (a BullMQ wake-up), after the wake-ups queued before it. */
  withSlot<T>(fn: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.enter({
        inboxId: null,
        start: () => this.track(Promise.resolve().then(fn).then(resolve, reject)),
      });
    });
  }

  /** Wake-ups waiting for a slot. */
  waitingCount(): number {
    return this.waiting.length;
  }

  /**
   * Take no more; drop the in-memory wake-ups that have not started (their rows stay pending, for
   * the next start's reconciler or another process's sweep) and wait for the running ones. BullMQ
   * wake-ups already waiting for a slot still run: their worker is waiting for them to finish.
   */
  async close(): Promise<void> {
    this.open = false;
    this.waiting = this.waiting.filter((entry) => entry.inboxId === null);
    this.notStarted.clear();
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  private queue(wakeUp: WakeUp): void {
    this.notStarted.set(wakeUp.inboxId, (this.notStarted.get(wakeUp.inboxId) ?? 0) + 1);
    this.enter({
      inboxId: wakeUp.inboxId,
      start: () => {
        this.forget(wakeUp.inboxId);
        this.track(Promise.resolve(wakeUp).then(this.run).catch((err: unknown) => this.retryLater(wakeUp, err instanceof Error ? err : new Error(String(err)))));
      },
    });
  }

  private enter(entry: Waiting): void {
    if (this.running < this.concurrency) this.begin(entry);
    else this.waiting.push(entry);
  }

  private begin(entry: Waiting): void {
    this.running++;
    entry.start();
  }

  private track(work: Promise<void>): void {
    const done = work.finally(() => {
      this.inFlight.delete(done);
      this.running--;
      const next = this.waiting.shift();
      if (next) this.begin(next);
    });
    this.inFlight.add(done);
  }

  private forget(inboxId: number): void {
    const n = this.notStarted.get(inboxId) ?? 0;
    if (n <= 1) this.notStarted.delete(inboxId);
    else this.notStarted.set(inboxId, n - 1);
  }
}
