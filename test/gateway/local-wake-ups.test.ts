// In-process wake-ups: one set of slots for in-memory and BullMQ wake-ups, first come first served;
// while another process shares the queue only as many in-memory wake-ups as there are free slots
// (the rest come back for BullMQ), alone a bounded backlog too; a hand-on likewise, and nothing
// while the row's own wake-up is still to start; the owner hears when every slot is busy and when
// one is free; a failed wake-up goes to the retry path; closing drops what has not started and
// waits for what runs.
import { describe, expect, it } from "vitest";
import { LocalWakeUps, type LocalWakeUpsOptions, type WakeUp } from "../../src/gateway/local-wake-ups.js";

/** A run function whose calls finish when the test says so. */
function controlledRuns(): { run: (w: WakeUp) => Promise<void>; started: number[]; finish(inboxId: number, err?: Error): void } {
  const started: number[] = [];
  const pending = new Map<number, { resolve: () => void; reject: (err: Error) => void }>();
  return {
    started,
    run: (w) =>
      new Promise<void>((resolve, reject) => {
        started.push(w.inboxId);
        pending.set(w.inboxId, { resolve, reject });
      }),
    finish(inboxId, err) {
      const p = pending.get(inboxId);
      if (!p) throw new Error(`wake-up ${inboxId} is not running`);
      pending.delete(inboxId);
      if (err) p.reject(err);
      else p.resolve();
    },
  };
}

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
const w = (inboxId: number, conversationId = `c${inboxId}`): WakeUp => ({ conversationId, inboxId });

/** Wake-ups with these slots and backlog; `sharing` says whether another process takes jobs. */
function wakeUps(runs: { run: (w: WakeUp) => Promise<void> }, options: Partial<LocalWakeUpsOptions> & { concurrency: number }, retryLater: (w: WakeUp, err: Error) => void = () => undefined): LocalWakeUps {
  return new LocalWakeUps({ backlog: 0, sharing: () => false, ...options }, runs.run, retryLater);
}

describe("in-process wake-ups", () => {
  it("while another process shares the queue, takes only as many as it has free slots and gives the rest back in order", async () => {
    const runs = controlledRuns();
    const local = wakeUps(runs, { concurrency: 2, backlog: 10, sharing: () => true });
    expect(local.offer([w(1), w(2), w(3)])).toEqual([w(3)]);
    await tick();
    expect(runs.started).toEqual([1, 2]);
    expect(local.room()).toBe(0);
    expect(local.offer([w(4)])).toEqual([w(4)]);
    runs.finish(2);
    await tick();
    expect(local.offer([w(5), w(6)])).toEqual([w(6)]);
    await tick();
    expect(runs.started).toEqual([1, 2, 5]);
  });

  it("alone, keeps a bounded backlog waiting for a slot, and runs it in the order offered", async () => {
    const runs = controlledRuns();
    let sharing = false;
    const local = wakeUps(runs, { concurrency: 2, backlog: 2, sharing: () => sharing });
    expect(local.offer([w(1), w(2), w(3), w(4), w(5)])).toEqual([w(5)]);
    await tick();
    expect(runs.started).toEqual([1, 2]);
    expect(local.waitingCount()).toBe(2);
    // Another process appears: no more backlog; what already waits here stays.
    sharing = true;
    expect(local.offer([w(6)])).toEqual([w(6)]);
    runs.finish(1);
    await tick();
    expect(runs.started).toEqual([1, 2, 3]);
  });

  it("runs BullMQ's wake-ups in the same slots and the same line", async () => {
    const runs = controlledRuns();
    const local = wakeUps(runs, { concurrency: 1, backlog: 5 });
    local.offer([w(1)]);
    const fromQueue = local.withSlot(async () => "job done");
    local.offer([w(2)]);
    await tick();
    expect(local.waitingCount()).toBe(2);
    runs.finish(1);
    expect(await fromQueue).toBe("job done");
    await tick();
    expect(runs.started).toEqual([1, 2]);
  });

  it("tells its owner when every slot is busy and when one is free again", async () => {
    const runs = controlledRuns();
    const changes: boolean[] = [];
    const local = wakeUps(runs, { concurrency: 2, onFull: (full) => changes.push(full) });
    local.offer([w(1)]);
    expect(changes).toEqual([]);
    expect(local.isFull()).toBe(false);
    local.offer([w(2)]);
    expect(changes).toEqual([true]);
    await tick();
    runs.finish(1);
    await tick();
    expect(changes).toEqual([true, false]);
    const job = local.withSlot(async () => undefined);
    expect(changes).toEqual([true, false, true]);
    await job;
    await tick();
    expect(changes).toEqual([true, false, true, false]);
  });

  it("hands on in memory while there is room, and goes back to the caller when there is none", async () => {
    const runs = controlledRuns();
    const local = wakeUps(runs, { concurrency: 2, sharing: () => true });
    local.offer([w(1, "a")]);
    // Row 1's turn (holding one slot) hands on to row 2: the free slot takes it at once.
    expect(local.handOn(w(2, "a"))).toBe(true);
    await tick();
    expect(runs.started).toEqual([1, 2]);
    // Both slots busy: the hand-on goes back to the caller (it goes through BullMQ).
    expect(local.handOn(w(3, "b"))).toBe(false);
    runs.finish(2);
    await tick();
    expect(local.handOn(w(3, "b"))).toBe(true);
    await tick();
    expect(runs.started).toEqual([1, 2, 3]);
  });

  it("adds nothing when handing on to a row whose own wake-up still waits for a slot", async () => {
    const runs = controlledRuns();
    const local = wakeUps(runs, { concurrency: 1, backlog: 4 });
    local.offer([w(1, "a"), w(2, "a")]);
    await tick();
    expect(runs.started).toEqual([1]);
    expect(local.handOn(w(2, "a"))).toBe(true);
    expect(local.waitingCount()).toBe(1);
    runs.finish(1);
    await tick();
    expect(runs.started).toEqual([1, 2]);
    // Now it has started: a hand-on to row 2 queues a fresh wake-up.
    expect(local.handOn(w(2, "a"))).toBe(true);
    expect(local.waitingCount()).toBe(1);
  });

  it("gives a wake-up that failed to the retry path, and keeps going", async () => {
    const runs = controlledRuns();
    const retried: Array<{ wakeUp: WakeUp; err: string }> = [];
    const local = wakeUps(runs, { concurrency: 1, backlog: 1 }, (wakeUp, err) => retried.push({ wakeUp, err: err.message }));
    local.offer([w(1), w(2)]);
    await tick();
    runs.finish(1, new Error("lease timeout"));
    await tick();
    expect(retried).toEqual([{ wakeUp: w(1), err: "lease timeout" }]);
    expect(runs.started).toEqual([1, 2]);
  });

  it("on close takes no more, drops what has not started, and waits for what runs (a BullMQ wake-up in line still runs)", async () => {
    const runs = controlledRuns();
    const local = wakeUps(runs, { concurrency: 1, backlog: 4 });
    local.offer([w(1), w(2)]);
    let jobRan = false;
    const job = local.withSlot(async () => {
      jobRan = true;
    });
    await tick();
    let closed = false;
    const closing = local.close().then(() => (closed = true));
    expect(local.offer([w(3)])).toEqual([w(3)]);
    expect(local.handOn(w(4))).toBe(false);
    await tick();
    expect(closed).toBe(false);
    runs.finish(1);
    await job;
    await closing;
    expect(jobRan).toBe(true);
    expect(closed).toBe(true);
    expect(runs.started).toEqual([1]);
  });
});
