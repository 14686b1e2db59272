// In-process wake-ups, work-conserving: when the process (or its workers thread) that accepted a
// message also runs turns and has a free slot, the new row's wake-up is handed over in memory
// instead of as a BullMQ job (about thirty Redis commands per message). Without a free slot the
// wake-up goes to BullMQ, which every worker process on every node takes from: an added worker or
// node always gets its share, and no turn waits here while a slot elsewhere is free. The inbox row
// is already durable, so nothing accepted depends on this queue: a wake-up lost with a dead process
// or thread is found again by the reconciler and by turn recovery's sweep for pending rows.
//
// The same slots also run the BullMQ wake-ups (recovery, other processes' ingress, spilled ones),
// so the configured concurrency holds whichever way a wake-up came. `onFull` tells the owner when
// every slot is taken (it then stops taking BullMQ jobs, which would only wait here) and when one
// is free again.
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

/** What a sink did with an offer: the wake-ups it had no slot for, to be added as BullMQ jobs once `announced` settles. */
export interface Spilled {
  rest: WakeUp[];
  /** The spilled rows' `message.queued` notices, published (or failed). */
  announced: Promise<void>;
}

/**
 * Where ingress offers new rows' wake-ups. The sink announces every row it is offered (its
 * `message.queued` notice, on the event bus of the thread that runs turns: queued-notices.ts) and
 * takes those it has free slots for; the rest come back. Null: it takes none (it is closing or
 * its thread is down), and the caller announces and enqueues them all.
 */
export interface WakeUpSink {
  /** The announcer id ingress writes into the rows it records for this sink; null while there is none. */
  readonly announcer: string | null;
  offer(wakeUps: readonly WakeUp[], notices: readonly QueuedNotice[]): Spilled | null;
}

export class LocalWakeUps {
  private running = 0;
  /** BullMQ wake-ups waiting for a slot (in-memory ones start at once or are not taken). */
  private waiting: Array<() => void> = [];
  private readonly inFlight = new Set<Promise<void>>();
  private open = true;
  private full = false;

  /**
   * `run` does one wake-up (read the conversation's head under its lease, run the turn); when it
   * throws (a turn to retry later), `retryLater` gets the wake-up. `onFull` hears each change
   * between "every slot taken" and "a slot free".
   */
  constructor(
    private readonly concurrency: number,
    private readonly run: (wakeUp: WakeUp) => Promise<void>,
    private readonly retryLater: (wakeUp: WakeUp, err: Error) => void,
    private readonly onFull: (full: boolean) => void = () => undefined,
  ) {}

  /** False once closing: offers are refused from then on. */
  get accepting(): boolean {
    return this.open;
  }

  /** Slots neither running nor promised to a waiting wake-up. */
  freeSlots(): number {
    return Math.max(0, this.concurrency - this.running - this.waiting.length);
  }

  /** Start as many wake-ups as there are free slots, in order; the rest come back (all of them once closing). */
  offer(wakeUps: readonly WakeUp[]): WakeUp[] {
    if (!this.open) return [...wakeUps];
    const taken = Math.min(this.freeSlots(), wakeUps.length);
    for (const wakeUp of wakeUps.slice(0, taken)) this.startNow(wakeUp);
    return wakeUps.slice(taken);
  }

  /**
   * A finished turn's hand-on to its conversation's next row (the caller still holds its slot):
   * started in another slot when one is free. False when none is (or closing): the caller hands it
   * on through BullMQ, behind the wake-ups already waiting there.
   */
  handOn(wakeUp: WakeUp): boolean {
    if (!this.open || this.freeSlots() === 0) return false;
    this.startNow(wakeUp);
    return true;
  }

  /** Run `fn` in one of the slots (a BullMQ wake-up), after the BullMQ wake-ups already waiting for one. */
  withSlot<T>(fn: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const start = (): void => this.track(Promise.resolve().then(fn).then(resolve, reject));
      if (this.running < this.concurrency) this.begin(start);
      else this.waiting.push(start);
      this.reportFullness();
    });
  }

  /** Wake-ups waiting for a slot. */
  waitingCount(): number {
    return this.waiting.length;
  }

  /**
   * Take no more and wait for the running wake-ups. BullMQ wake-ups already waiting for a slot
   * still run: their worker is waiting for them to finish.
   */
  async close(): Promise<void> {
    this.open = false;
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  private startNow(wakeUp: WakeUp): void {
    this.begin(() => this.track(Promise.resolve(wakeUp).then(this.run).catch((err: unknown) => this.retryLater(wakeUp, err instanceof Error ? err : new Error(String(err))))));
    this.reportFullness();
  }

  private begin(start: () => void): void {
    this.running++;
    start();
  }

  private track(work: Promise<void>): void {
    const done = work.finally(() => {
      this.inFlight.delete(done);
      this.running--;
      const next = this.waiting.shift();
      if (next) this.begin(next);
      this.reportFullness();
    });
    this.inFlight.add(done);
  }

  private reportFullness(): void {
    const full = this.freeSlots() === 0;
    if (full === this.full) return;
    this.full = full;
    this.onFull(full);
  }
}
