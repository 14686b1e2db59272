// In-process wake-ups: one set of slots for in-memory and BullMQ wake-ups; only as many in-memory
// wake-ups as there are free slots (the rest come back for BullMQ), and a hand-on likewise; the
// owner hears when every slot is taken and when one is free; a failed wake-up goes to the retry
// path; closing takes no more and waits for what runs.
import { describe, expect, it } from "vitest";
import { LocalWakeUps, type WakeUp } from "../../src/gateway/local-wake-ups.js";

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

describe("in-process wake-ups", () => {
  it("takes only as many wake-ups as it has free slots, and gives the rest back in order", async () => {
    const runs = controlledRuns();
    const local = new LocalWakeUps(2, runs.run, () => undefined);
    expect(local.offer([w(1), w(2), w(3)])).toEqual([w(3)]);
    await tick();
    expect(runs.started).toEqual([1, 2]);
    expect(local.freeSlots()).toBe(0);
    expect(local.offer([w(4)])).toEqual([w(4)]);
    runs.finish(2);
    await tick();
    expect(local.freeSlots()).toBe(1);
    expect(local.offer([w(5), w(6)])).toEqual([w(6)]);
    await tick();
    expect(runs.started).toEqual([1, 2, 5]);
  });

  it("runs BullMQ's wake-ups in the same slots, first come first served, and counts them as taken", async () => {
    const runs = controlledRuns();
    const local = new LocalWakeUps(1, runs.run, () => undefined);
    local.offer([w(1)]);
    const fromQueue = local.withSlot(async () => "job done");
    await tick();
    expect(local.waitingCount()).toBe(1);
    // The job waiting for the slot has it promised: no room for another in-memory wake-up.
    expect(local.offer([w(2)])).toEqual([w(2)]);
    runs.finish(1);
    expect(await fromQueue).toBe("job done");
    await tick();
    expect(local.freeSlots()).toBe(1);
  });

  it("tells its owner when every slot is taken and when one is free again", async () => {
    const runs = controlledRuns();
    const changes: boolean[] = [];
    const local = new LocalWakeUps(2, runs.run, () => undefined, (full) => changes.push(full));
    local.offer([w(1)]);
    expect(changes).toEqual([]);
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

  it("hands on in memory only while a slot is free", async () => {
    const runs = controlledRuns();
    const local = new LocalWakeUps(2, runs.run, () => undefined);
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

  it("gives a wake-up that failed to the retry path, and keeps going", async () => {
    const runs = controlledRuns();
    const retried: Array<{ wakeUp: WakeUp; err: string }> = [];
    const local = new LocalWakeUps(2, runs.run, (wakeUp, err) => retried.push({ wakeUp, err: err.message }));
    local.offer([w(1), w(2)]);
    await tick();
    runs.finish(1, new Error("lease timeout"));
    await tick();
    expect(retried).toEqual([{ wakeUp: w(1), err: "lease timeout" }]);
    expect(runs.started).toEqual([1, 2]);
  });

  it("on close takes no more and waits for what runs (a BullMQ wake-up in line still runs)", async () => {
    const runs = controlledRuns();
    const local = new LocalWakeUps(2, runs.run, () => undefined);
    local.offer([w(1), w(2)]);
    let jobRan = false;
    const job = local.withSlot(async () => {
      jobRan = true;
    });
    await tick();
    let closed = false;
    const closing = local.close().then(() => (closed = true));
    runs.finish(1);
    expect(local.offer([w(3)])).toEqual([w(3)]);
    expect(local.handOn(w(4))).toBe(false);
    await job;
    expect(jobRan).toBe(true);
    await tick();
    expect(closed).toBe(false);
    runs.finish(2);
    await closing;
    expect(closed).toBe(true);
    expect(runs.started).toEqual([1, 2]);
  });
});
