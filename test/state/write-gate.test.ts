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
// it `holdMs` (forever when negative), then release and notify.
const HOLDER = `
const { getEnvironmentData, parentPort, threadId, workerData } = require("node:worker_threads");
const cell = new Int32Array(getEnvironmentData(workerData.key));
while (Atomics.compareExchange(cell, 0, 0, threadId + 1) !== 0) Atomics.wait(cell, 0, Atomics.load(cell, 0), 10);
parentPort.postMessage("held");
if (workerData.holdMs >= 0) {
  setTimeout(() => { Atomics.store(cell, 0, 0); Atomics.notify(cell, 0, 1); parentPort.postMessage("released"); }, workerData.holdMs);
}
`;

const workers: Worker[] = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.terminate()));
});

function holdInThread(fileKey: string, holdMs: number): Promise<Worker> {
  const worker = new Worker(HOLDER, { eval: true, workerData: { key: `switchboard.sqlite-write-gate:${fileKey}`, holdMs } });
  workers.push(worker);
  return new Promise((resolve, reject) => {
    worker.once("message", () => resolve(worker));
    worker.once("error", reject);
  });
}

describe("WriteGate", () => {
  it("makes a writer wait for another thread's hold, and wakes it at the release", async () => {
    const key = `test-${randomUUID()}`;
    const gate = WriteGate.forFile(key);
    await holdInThread(key, 150);
    const before = writeGateStats().waits;
    const started = performance.now();
    const value = gate.hold(() => 42);
    const waited = performance.now() - started;
    expect(value).toBe(42);
    expect(waited).toBeGreaterThanOrEqual(100);
    // Woken by the release, not by the take-over deadline.
    expect(waited).toBeLessThan(900);
    expect(writeGateStats().waits - before).toBe(1);
  });

  it("waits asynchronously with holdAsync: the event loop runs meanwhile", async () => {
    const key = `test-${randomUUID()}`;
    const gate = WriteGate.forFile(key);
    await holdInThread(key, 150);
    let ticks = 0;
    const ticker = setInterval(() => (ticks += 1), 10);
    const started = performance.now();
    try {
      expect(await gate.holdAsync(() => "written")).toBe("written");
    } finally {
      clearInterval(ticker);
    }
    const waited = performance.now() - started;
    expect(waited).toBeGreaterThanOrEqual(100);
    expect(waited).toBeLessThan(900);
    expect(ticks).toBeGreaterThan(3);
    // Released: a sync hold right after does not wait.
    const again = performance.now();
    gate.hold(() => undefined);
    expect(performance.now() - again).toBeLessThan(50);
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
    await holdInThread(key, -1);
    const started = performance.now();
    expect(gate.hold(() => "taken over")).toBe("taken over");
    expect(performance.now() - started).toBeGreaterThanOrEqual(90);
    // Released after the take-over: the next hold does not wait.
    const again = performance.now();
    gate.hold(() => undefined);
    expect(performance.now() - again).toBeLessThan(50);
  });

  it("is taken by a store's writes, not its reads", async () => {
    const { dir, cleanup } = makeTempDir();
    const store = new SessionDB(join(dir, "gate.db"));
    try {
      await store.createSession("s", { source: "test" });
      await holdInThread(realpathSync(join(dir, "gate.db")), 150);
      const read = performance.now();
      expect(await store.getSession("s")).not.toBeNull();
      expect(performance.now() - read).toBeLessThan(100);
      const waitsBefore = writeGateStats().waits;
      const write = performance.now();
      await store.recordInbound({ platform: "t", platformMessageId: "m", sessionId: "s", payload: { text: "hi" }, receivedAt: 1 });
      expect(performance.now() - write).toBeGreaterThanOrEqual(100);
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
    const holder = await holdInThread(fileKey, 60);
    const entered = gate.holdAsync(() => "in");
    // This thread now waits: a holder in another thread sees it.
    expect(cell[1]).toBe(1);
    expect(gate.othersWaiting()).toBe(true);
    const released = new Promise((resolve) => holder.once("message", resolve));
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
    const gate = WriteGate.forFile(fileKey, 2_000);
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
    expect(Math.max(...waitedMs)).toBeLessThan(300);
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
