// The in-process SQLite write gate: threads of one process that write the same file take turns
// (the waiter wakes when the holder releases), a nested hold does not deadlock, and a gate left
// held (a terminated thread) is taken over after a while.
import { randomUUID } from "node:crypto";
import { realpathSync } from "node:fs";
import { join } from "node:path";
import { getEnvironmentData, Worker } from "node:worker_threads";
import { afterEach, describe, expect, it } from "vitest";
import { SessionDB } from "../../src/state/session-db.js";
import { WriteGate, writeGateStats } from "../../src/state/write-gate.js";
import { makeTempDir } from "../support/tmp.js";

// Another thread of this process at the gate, in plain JS: take the cell (as the gate does), hold
// it, then release and notify, recording the release in `control[1]` first. It lets go when this
// thread's waiter shows in the waiting count (after a pause, so the waiter is asleep by then),
// when the test sets `control[0]`, or never.
const HOLDER = `
const { getEnvironmentData, parentPort, threadId, workerData } = require("node:worker_threads");
const cell = new Int32Array(getEnvironmentData(workerData.key));
const control = new Int32Array(workerData.control);
const pause = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
while (Atomics.compareExchange(cell, 0, 0, threadId + 1) !== 0) Atomics.wait(cell, 0, Atomics.load(cell, 0), 10);
parentPort.postMessage("held");
const release = () => { Atomics.store(control, 1, 1); Atomics.store(cell, 0, 0); Atomics.notify(cell, 0, 1); parentPort.postMessage("released"); };
if (workerData.until === "waited") {
  while (Atomics.load(cell, 1) === 0) pause(2);
  pause(20);
  release();
} else if (workerData.until === "told") {
  Atomics.wait(control, 0, 0);
  release();
}
`;

type ReleaseWhen = "waited" | "told" | "never";

interface Holder {
  worker: Worker;
  /** The holder has let go (read from any thread, without its event loop). */
  released(): boolean;
  /** Let go now (for "told"). */
  tell(): void;
}

const workers: Worker[] = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.terminate()));
});

function holdInThread(fileKey: string, until: ReleaseWhen): Promise<Holder> {
  const control = new Int32Array(new SharedArrayBuffer(8));
  const worker = new Worker(HOLDER, { eval: true, workerData: { key: `switchboard.sqlite-write-gate:${fileKey}`, until, control: control.buffer } });
  workers.push(worker);
  const holder: Holder = {
    worker,
    released: () => Atomics.load(control, 1) === 1,
    tell() {
      Atomics.store(control, 0, 1);
      Atomics.notify(control, 0);
    },
  };
  return new Promise((resolve, reject) => {
    worker.once("message", () => resolve(holder));
    worker.once("error", reject);
  });
}

/** Far past any wait these tests expect: a waiter still out by then was not woken by the release. */
const TAKE_OVER_MS = 10_000;

describe("WriteGate", () => {
  it("makes a writer wait for another thread's hold, and wakes it at the release", async () => {
    const key = `test-${randomUUID()}`;
    const gate = WriteGate.forFile(key, TAKE_OVER_MS);
    const holder = await holdInThread(key, "waited");
    const before = writeGateStats().waits;
    const started = performance.now();
    // The work runs after the holder let go.
    expect(gate.hold(() => holder.released())).toBe(true);
    expect(writeGateStats().waits - before).toBe(1);
    // Woken by the release, not by the take-over deadline: the release follows the waiter's
    // arrival by a pause of 20 ms, the take-over would come after 10 s.
    expect(performance.now() - started).toBeLessThan(TAKE_OVER_MS);
  });

  it("waits asynchronously with holdAsync: the event loop runs meanwhile", async () => {
    const key = `test-${randomUUID()}`;
    const gate = WriteGate.forFile(key, TAKE_OVER_MS);
    const holder = await holdInThread(key, "told");
    const before = writeGateStats().waits;
    const written = gate.holdAsync(() => holder.released());
    // The holder is told to let go by a timer of this thread while holdAsync waits: a wait that
    // blocked this thread could not get in before the take-over, and would find it not released.
    setTimeout(() => holder.tell(), 20);
    expect(await written).toBe(true);
    expect(writeGateStats().waits - before).toBe(1);
    // Released: a sync hold right after does not wait.
    gate.hold(() => undefined);
    expect(writeGateStats().waits - before).toBe(1);
  });

  it("runs a nested hold in the same thread straight through, and releases after the outer one", () => {
    const key = `test-${randomUUID()}`;
    const outer = WriteGate.forFile(key);
    const inner = WriteGate.forFile(key);
    const before = writeGateStats().waits;
    expect(outer.hold(() => inner.hold(() => "nested"))).toBe("nested");
    expect(inner.hold(() => "again")).toBe("again");
    expect(writeGateStats().waits).toBe(before);
  });

  it("takes over a gate its holder never releases", async () => {
    const key = `test-${randomUUID()}`;
    const gate = WriteGate.forFile(key, 100);
    const holder = await holdInThread(key, "never");
    const before = writeGateStats().waits;
    const started = performance.now();
    expect(gate.hold(() => holder.released())).toBe(false);
    // Taken over once the take-over time had passed, not sooner.
    expect(performance.now() - started).toBeGreaterThanOrEqual(90);
    // Released after the take-over: the next hold does not wait.
    gate.hold(() => undefined);
    expect(writeGateStats().waits - before).toBe(1);
  });

  it("is taken by a store's writes, not its reads", async () => {
    const { dir, cleanup } = makeTempDir();
    const store = new SessionDB(join(dir, "gate.db"));
    try {
      await store.createSession("s", { source: "test" });
      // Held until a writer waits for it.
      const holder = await holdInThread(realpathSync(join(dir, "gate.db")), "waited");
      const waitsBefore = writeGateStats().waits;
      expect(await store.getSession("s")).not.toBeNull();
      expect(writeGateStats().waits).toBe(waitsBefore);
      expect(holder.released()).toBe(false);
      await store.recordInbound({ platform: "t", platformMessageId: "m", sessionId: "s", payload: { text: "hi" }, receivedAt: 1 });
      // The write waited: the holder lets go only for a waiter.
      expect(holder.released()).toBe(true);
      expect(writeGateStats().waits - waitsBefore).toBe(1);
    } finally {
      await store.close();
      cleanup();
    }
  });

  it("counts the threads waiting for it, so a holder's batch can give way, and tells the holder when one got in", async () => {
    const fileKey = randomUUID();
    const gate = WriteGate.forFile(fileKey);
    const cell = new Int32Array(getEnvironmentData(`switchboard.sqlite-write-gate:${fileKey}`) as SharedArrayBuffer);
    const holder = await holdInThread(fileKey, "told");
    const entered = gate.holdAsync(() => "in");
    // This thread now waits: a holder in another thread sees it.
    expect(cell[1]).toBe(1);
    expect(gate.othersWaiting()).toBe(true);
    const released = new Promise((resolve) => holder.worker.once("message", resolve));
    holder.tell();
    expect(await entered).toBe("in");
    await released;
    expect(cell[1]).toBe(0);
    expect(gate.othersWaiting()).toBe(false);
    // Nobody waits: a holder that gave way goes on at once, before any timer or I/O callback
    // could run (a wall-clock bound would fail on a busy machine, this cannot).
    let wentOn = false;
    void gate.afterWaiters().then(() => (wentOn = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(wentOn).toBe(true);
  });

  it("hands the gate at its release straight to the thread waiting to be next", async () => {
    const fileKey = randomUUID();
    const gate = WriteGate.forFile(fileKey);
    const cell = new Int32Array(getEnvironmentData(`switchboard.sqlite-write-gate:${fileKey}`) as SharedArrayBuffer);
    let waiter = 0;
    gate.hold(() => {
      // Another thread waits to be next while this one holds the gate (as an HTTP thread's insert marks itself).
      waiter = 4242;
      Atomics.store(cell, 3, waiter);
    });
    // Released: already the waiter's, before it could even try to take it; its mark is spent.
    expect(Atomics.load(cell, 0)).toBe(waiter);
    expect(Atomics.load(cell, 3)).toBe(0);
    Atomics.store(cell, 0, 0);
    // With nobody waiting to be next, a release leaves the gate free.
    gate.hold(() => undefined);
    expect(Atomics.load(cell, 0)).toBe(0);
  });

  it("gets a waiter whose event loop is busy in after one of the other thread's writes, not after the take-over time", async () => {
    const fileKey = randomUUID();
    const gate = WriteGate.forFile(fileKey, 5_000);
    const stop = new SharedArrayBuffer(4);
    // The fixture is TypeScript: the thread registers tsx's loader before importing it.
    const script = `import("tsx/esm/api").then(({ register }) => { register(); return import(${JSON.stringify(new URL("./fixtures/gate-writer.ts", import.meta.url).href)}); })`;
    const writer = new Worker(script, { eval: true, workerData: { fileKey, stop } });
    workers.push(writer);
    const messages: Array<{ type: string; holds?: number }> = [];
    writer.on("message", (m: { type: string; holds?: number }) => messages.push(m));
    await new Promise<void>((resolve, reject) => {
      writer.once("message", () => resolve());
      writer.once("error", reject);
    });
    // Three times (a waiter can be lucky and find the gate free between two writes): this thread's
    // event loop stays busy 20 ms (a pass reading a flood of requests) before its wait's
    // continuation can run, while the other thread writes back to back. Taking the gate at a
    // release it was woken by, it lost that race nearly every time and waited for the take-over.
    // Each round's wait against the take-over time (5 s): only a waiter that lost every race
    // until the take-over comes near it (a round takes some 25 ms).
    const waitedMs: number[] = [];
    for (let round = 0; round < 3; round++) {
      const started = performance.now();
      const entered = gate.holdAsync(() => performance.now());
      const end = performance.now() + 20;
      while (performance.now() < end);
      waitedMs.push((await entered) - started);
    }
    Atomics.store(new Int32Array(stop), 0, 1);
    await new Promise<void>((resolve) => writer.once("exit", () => resolve()));
    expect(Math.max(...waitedMs)).toBeLessThan(2_500);
    // The other thread went on writing in between.
    expect(messages.at(-1)?.holds).toBeGreaterThan(0);
  });

  it("stops giving way for a while to a waiting count nobody answers (a thread that ended while it waited)", async () => {
    const fileKey = randomUUID();
    const gate = WriteGate.forFile(fileKey);
    const cell = new Int32Array(getEnvironmentData(`switchboard.sqlite-write-gate:${fileKey}`) as SharedArrayBuffer);
    Atomics.store(cell, 1, 1);
    expect(gate.othersWaiting()).toBe(true);
    const started = performance.now();
    await gate.afterWaiters();
    expect(performance.now() - started).toBeGreaterThanOrEqual(4);
    expect(gate.othersWaiting()).toBe(false);
    await new Promise((resolve) => setTimeout(resolve, 120));
    expect(gate.othersWaiting()).toBe(true);
  });
});
