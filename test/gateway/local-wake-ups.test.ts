// In-process wake-ups: one set of slots for in-memory and BullMQ wake-ups, first come first
// served; a hand-on adds nothing while the row's own wake-up is still to start; a failed wake-up
// goes to the retry path; closing drops what has not started and waits for what has.
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
  it("runs at most `concurrency` at once, in the order offered, BullMQ's wake-ups in the same line", async () => {
    const runs = controlledRuns();
    const local = new LocalWakeUps(2, runs.run, () => undefined);
    expect(local.offer([w(1), w(2), w(3)])).toBe(true);
    const fromQueue = local.withSlot(async () => "job done");
    local.offer([w(4)]);
    await tick();
    expect(runs.started).toEqual([1, 2]);
    expect(local.waitingCount()).toBe(3);
    runs.finish(2);
    await tick();
    expect(runs.started).toEqual([1, 2, 3]);
    runs.finish(1);
    // The BullMQ wake-up took the freed slot before the later in-memory one.
    expect(await fromQueue).toBe("job done");
    await tick();
    expect(runs.started).toEqual([1, 2, 3, 4]);
  });

  it("hands on only when the row's own wake-up has already started", async () => {
    const runs = controlledRuns();
    const local = new LocalWakeUps(1, runs.run, () => undefined);
    local.offer([w(1, "a"), w(2, "a")]);
    await tick();
    expect(runs.started).toEqual([1]);
    // Row 2's wake-up waits in line: handing on to it adds nothing.
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
    const local = new LocalWakeUps(1, runs.run, (wakeUp, err) => retried.push({ wakeUp, err: err.message }));
    local.offer([w(1), w(2)]);
    await tick();
    runs.finish(1, new Error("lease timeout"));
    await tick();
    expect(retried).toEqual([{ wakeUp: w(1), err: "lease timeout" }]);
    expect(runs.started).toEqual([1, 2]);
  });

  it("on close takes no more, drops what has not started, and waits for what runs (a BullMQ wake-up in line still runs)", async () => {
    const runs = controlledRuns();
    const local = new LocalWakeUps(1, runs.run, () => undefined);
    local.offer([w(1), w(2)]);
    let jobRan = false;
    const job = local.withSlot(async () => {
      jobRan = true;
    });
    await tick();
    let closed = false;
    const closing = local.close().then(() => (closed = true));
    expect(local.offer([w(3)])).toBe(false);
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
