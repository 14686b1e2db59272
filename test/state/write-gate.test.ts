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
