// In-process wake-ups, work-conserving, the one way a process that accepts messages and runs turns
// wakes them: the new row's wake-up is handed over in memory instead of as a BullMQ job (a job's
// life is many Redis commands per message), but only while that cannot keep a turn from a free
// slot elsewhere:
//   - while another process runs turn workers on the same queue (`sharing`), only as many as
//     there are free slots here; the rest go on the BullMQ queue, which every worker process on
//     every node takes from, and the owner stops taking jobs while every slot here is busy;
//   - alone, also a bounded backlog waiting for a slot (a job would only come back here).
// The inbox row is already durable, so nothing accepted depends on this queue: a wake-up lost with
// a dead process or thread is found again by the reconciler and by turn recovery's sweep.
//
// The same slots also run the BullMQ wake-ups (recovery, retries, other processes' ingress, spilled
// ones), so the configured concurrency holds whichever way a wake-up came.
import type { InboxRow } from "../state/types.js";
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
  /**
   * The row as it was recorded, when the sender has it: the turn offers its message to the
   * admission's own step to store (turn-worker.ts). Only with `platform`.
   */
  row?: InboxRow;
}

/** What a sink did with an offer: the wake-ups it had no room for, to be added as BullMQ jobs once `announced` settles. */
export interface Spilled {
  rest: WakeUp[];
  /** The spilled rows' `message.queued` notices, published (or failed). */
  announced: Promise<void>;
}

/**
 * Where ingress offers new rows' wake-ups. The sink announces every row it is offered (its
 * `message.queued` notice, on the event bus of the thread that runs turns: queued-notices.ts) and
 * takes those it has room for; the rest come back. Null: it takes none (it is closing or its
 * thread is down), and the caller announces and enqueues them all.
 */
export interface WakeUpSink {
  /** The announcer id ingress writes into the rows it records for this sink; null while there is none. */
  readonly announcer: string | null;
  offer(wakeUps: readonly WakeUp[], notices: readonly QueuedNotice[]): Spilled | null;
}

export interface LocalWakeUpsOptions {
  /** Turns at once. */
  concurrency: number;
  /** In-memory wake-ups that may wait for a slot while no other process takes turns. */
  backlog: number;
  /** Whether another process takes wake-ups from the shared queue now. */
  sharing: () => boolean;
  /** Hears each change between "every slot busy" and "a slot free". */
  onFull?: (full: boolean) => void;
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
  private full = false;

  /**
   * `run` does one wake-up (read the conversation's head under its lease, run the turn); when it
   * throws (a turn to retry later), `retryLater` gets the wake-up.
   */
  constructor(
    private readonly options: LocalWakeUpsOptions,
    private readonly run: (wakeUp: WakeUp) => Promise<void>,
    private readonly retryLater: (wakeUp: WakeUp, err: Error) => void,
  ) {}

  /** False once closing: offers are refused from then on. */
  get accepting(): boolean {
    return this.open;
  }

  /** Whether every slot is busy. */
  isFull(): boolean {
    return this.running >= this.options.concurrency;
  }

  /** In-memory wake-ups this process may take now: its free slots, and alone its backlog's room too. */
  room(): number {
    const { concurrency, backlog, sharing } = this.options;
    return Math.max(0, concurrency + (sharing() ? 0 : backlog) - this.running - this.waiting.length);
  }

  /** Take as many wake-ups as there is room for, in order; the rest come back (all of them once closing). */
  offer(wakeUps: readonly WakeUp[]): WakeUp[] {
    if (!this.open) return [...wakeUps];
    const taken = Math.min(this.room(), wakeUps.length);
    for (const wakeUp of wakeUps.slice(0, taken)) this.queue(wakeUp);
    return wakeUps.slice(taken);
  }

  /**
   * A finished turn's hand-on to its conversation's next row (the caller still holds its slot):
   * nothing when that row's own wake-up is still to start; else a fresh one when there is room.
   * False when there is none (or closing): the caller hands it on through BullMQ, behind the
   * wake-ups already waiting there.
   */
  handOn(wakeUp: WakeUp): boolean {
    if (!this.open) return false;
    if (this.notStarted.has(wakeUp.inboxId)) return true;
    if (this.room() === 0) return false;
    this.queue(wakeUp);
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
    if (this.running < this.options.concurrency) this.begin(entry);
    else this.waiting.push(entry);
  }

  private begin(entry: Waiting): void {
    this.running++;
    entry.start();
    this.reportFullness();
  }

  private track(work: Promise<void>): void {
    const done = work.finally(() => {
      this.inFlight.delete(done);
      this.running--;
      const next = this.waiting.shift();
      if (next) this.begin(next);
      else this.reportFullness();
    });
    this.inFlight.add(done);
  }

  private reportFullness(): void {
    const full = this.isFull();
    if (full === this.full) return;
    this.full = full;
    this.options.onFull?.(full);
  }

  private forget(inboxId: number): void {
    const n = this.notStarted.get(inboxId) ?? 0;
    if (n <= 1) this.notStarted.delete(inboxId);
    else this.notStarted.set(inboxId, n - 1);
  }
}
