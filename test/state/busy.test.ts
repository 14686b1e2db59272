// Another connection holds the write lock: callers wait asynchronously, and the event loop runs on.
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { MessageSql } from "../../src/state/messages.js";
import { contents, tempStore, type TempStore } from "./helpers.js";

let store: TempStore;
let locker: Database.Database | null = null;
beforeEach(() => {
  store = tempStore("sb-busy");
});
afterEach(async () => {
  if (locker?.inTransaction) locker.exec("ROLLBACK");
  locker?.close();
  locker = null;
  await store.cleanup();
});

/** Take the database's write lock on a separate raw connection and let it go after `ms`. */
function holdWriteLock(path: string, ms: number): Promise<number> {
  locker = new Database(path);
  locker.exec("BEGIN IMMEDIATE");
  return new Promise((resolve) =>
    setTimeout(() => {
      locker?.exec("COMMIT");
      resolve(performance.now());
    }, ms),
  );
}

/** Count timer ticks and the longest gap between them while `work` runs. */
async function watchEventLoop<T>(work: () => Promise<T>): Promise<{ value: T; ticks: number; maxGapMs: number }> {
  let ticks = 0;
  let last = performance.now();
  let maxGapMs = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    maxGapMs = Math.max(maxGapMs, now - last);
    last = now;
    ticks++;
  }, 10);
  try {
    const value = await work();
    return { value, ticks, maxGapMs };
  } finally {
    clearInterval(timer);
  }
}

describe("a database locked by another writer", () => {
  it("acquire reports contention (not a holder), keeps trying, and is admitted once the lock goes, without blocking the event loop", async () => {
    const db = store.open();
    const onWait = vi.fn();
    const onContended = vi.fn();
    const unlocked = holdWriteLock(store.path, 1000);
    const started = performance.now();
    const { value, ticks, maxGapMs } = await watchEventLoop(() =>
      db.acquireSessionTurnLease("s", "A", { waitSeconds: 10, onWait, onContended }),
    );
    const admittedAt = performance.now();
    expect(value).toBe(true);
    expect(admittedAt - started).toBeGreaterThanOrEqual(900);
    expect(admittedAt - (await unlocked)).toBeLessThan(500);
    expect(onContended).toHaveBeenCalled();
    expect(onWait).not.toHaveBeenCalled();
    expect(ticks).toBeGreaterThanOrEqual(20); // a blocking wait would give ~0
    expect(maxGapMs).toBeLessThan(500); // a blocking wait would stall it for the whole second
  });

  it("a lease attempt refused by the lock leaves the transcripts it holds: the next turn reads only newer rows", async () => {
    const db = store.open();
    await db.createSession("s", { source: "test" });
    await db.appendMessage("s", { role: "user", content: "one" });
    await db.appendMessage("s", { role: "assistant", content: "two" });
    const readUnderLease = { sessionId: "s", onRead: () => undefined };
    expect(await db.acquireSessionTurnLease("s", "A", { readUnderLease })).toBe(true);
    await db.releaseSessionTurnLease("s", "A");
    const asked = vi.spyOn(MessageSql.prototype, "rowsAfter");
    const onContended = vi.fn();
    const unlocked = holdWriteLock(store.path, 300);
    expect(await db.acquireSessionTurnLease("s", "B", { waitSeconds: 10, onContended, readUnderLease })).toBe(true);
    await unlocked;
    expect(onContended).toHaveBeenCalled();
    // One read, in the transaction that took the lease, of the rows after the two already held.
    expect(asked).toHaveBeenCalledTimes(1);
    expect(asked.mock.calls[0][1]).toBeGreaterThan(0);
    asked.mockRestore();
  });

  it("onHeldGiveUp gives up on a live holder only: a locked database is still waited out", async () => {
    const db = store.open();
    const onHeldGiveUp = vi.fn();
    const onContended = vi.fn();
    const unlocked = holdWriteLock(store.path, 600);
    expect(await db.acquireSessionTurnLease("s", "A", { waitSeconds: 10, onHeldGiveUp, onContended })).toBe(true);
    expect(performance.now()).toBeGreaterThanOrEqual(await unlocked);
    expect(onContended).toHaveBeenCalled();
    expect(onHeldGiveUp).not.toHaveBeenCalled();
  });

  it("appendMessage waits for the lock and then succeeds; reads are not blocked meanwhile (WAL)", async () => {
    const db = store.open();
    await db.createSession("s", { source: "t" });
    await db.appendMessage("s", { role: "user", content: "before" });
    const unlocked = holdWriteLock(store.path, 1000);
    const started = performance.now();
    const { value, ticks } = await watchEventLoop(async () => {
      const append = db.appendMessage("s", { role: "assistant", content: "after the lock" });
      const readStarted = performance.now();
      expect(contents(await db.getMessages("s"))).toEqual(["before"]);
      expect(performance.now() - readStarted).toBeLessThan(200);
      return append;
    });
    expect(typeof value).toBe("number");
    expect(performance.now() - started).toBeGreaterThanOrEqual(900);
    await unlocked;
    expect(ticks).toBeGreaterThanOrEqual(20);
    expect(contents(await db.getMessages("s"))).toEqual(["before", "after the lock"]);
  });

  it("opening an already migrated database does not queue behind the writer", async () => {
    const first = store.open();
    await first.createSession("s", { source: "t" });
    const unlocked = holdWriteLock(store.path, 600);
    const started = performance.now();
    const second = store.open();
    expect(performance.now() - started).toBeLessThan(300);
    expect(await second.getSession("s")).not.toBeNull();
    await unlocked;
  });

  it("gives up with SQLITE_BUSY once the retry deadline passes", async () => {
    const db = store.open({ busyRetryDeadlineMs: 150 });
    await db.createSession("s", { source: "t" });
    const unlocked = holdWriteLock(store.path, 600);
    await expect(db.appendMessage("s", { role: "user", content: "x" })).rejects.toMatchObject({ code: expect.stringMatching(/^SQLITE_BUSY/) });
    await unlocked;
    expect(await db.getMessages("s")).toEqual([]);
  });
});
