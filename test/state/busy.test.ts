// Another connection holds the write lock: callers wait asynchronously, and the event loop runs on.
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { busyRetryStats } from "../../src/state/busy-retry.js";
import { MessageSql } from "../../src/state/messages.js";
import { contents, tempStore, until, type TempStore } from "./helpers.js";

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

/**
 * Take the database's write lock on a separate raw connection; the test lets it go. Released from
 * this thread's event loop, so a wait that blocked the event loop could never see it go.
 */
function takeWriteLock(path: string): { release(): void } {
  locker = new Database(path);
  locker.exec("BEGIN IMMEDIATE");
  return {
    release() {
      locker?.exec("COMMIT");
    },
  };
}

/** Settles to whether `promise` has settled, after the callbacks already queued have run. */
async function hasSettled(promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  await new Promise((resolve) => setImmediate(resolve));
  return settled;
}

describe("a database locked by another writer", () => {
  it("acquire reports contention (not a holder), keeps trying, and is admitted once the lock goes, without blocking the event loop", async () => {
    const db = store.open();
    const onWait = vi.fn();
    const onContended = vi.fn();
    const lock = takeWriteLock(store.path);
    const admitted = db.acquireSessionTurnLease("s", "A", { waitSeconds: 10, onWait, onContended });
    // A timer of this thread ticks while the acquire waits, between its refused attempts; the
    // lock goes at the 20th tick. A wait inside SQLite would stall the loop for its whole busy
    // timeout, since the lock can only go from this loop.
    let ticks = 0;
    let maxGapMs = 0;
    await new Promise<void>((resolve) => {
      let last = performance.now();
      const timer = setInterval(() => {
        const now = performance.now();
        maxGapMs = Math.max(maxGapMs, now - last);
        last = now;
        if (++ticks >= 20 && onContended.mock.calls.length >= 2) {
          clearInterval(timer);
          resolve();
        }
      }, 10);
    });
    expect(await hasSettled(admitted)).toBe(false);
    const refused = onContended.mock.calls.length;
    lock.release();
    expect(await admitted).toBe(true);
    // Admitted at the first attempt after the lock went.
    expect(onContended).toHaveBeenCalledTimes(refused);
    expect(onWait).not.toHaveBeenCalled();
    // 100 ticks' worth: only a stall (a blocking wait) reaches it, not a busy machine's jitter.
    expect(maxGapMs).toBeLessThan(1_000);
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
    const lock = takeWriteLock(store.path);
    const admitted = db.acquireSessionTurnLease("s", "B", { waitSeconds: 10, onContended, readUnderLease });
    await until(() => onContended.mock.calls.length > 0, 5_000, "a refused attempt");
    lock.release();
    expect(await admitted).toBe(true);
    // One read, in the transaction that took the lease, of the rows after the two already held.
    expect(asked).toHaveBeenCalledTimes(1);
    expect(asked.mock.calls[0][1]).toBeGreaterThan(0);
    asked.mockRestore();
  });

  it("onHeldGiveUp gives up on a live holder only: a locked database is still waited out", async () => {
    const db = store.open();
    const onHeldGiveUp = vi.fn();
    const onContended = vi.fn();
    const lock = takeWriteLock(store.path);
    const admitted = db.acquireSessionTurnLease("s", "A", { waitSeconds: 10, onHeldGiveUp, onContended });
    await until(() => onContended.mock.calls.length >= 2, 5_000, "refused attempts");
    expect(await hasSettled(admitted)).toBe(false);
    lock.release();
    expect(await admitted).toBe(true);
    expect(onHeldGiveUp).not.toHaveBeenCalled();
  });

  it("appendMessage waits for the lock and then succeeds; reads are not blocked meanwhile (WAL)", async () => {
    const db = store.open();
    await db.createSession("s", { source: "t" });
    await db.appendMessage("s", { role: "user", content: "before" });
    const lock = takeWriteLock(store.path);
    const retriesBefore = busyRetryStats().retries;
    const append = db.appendMessage("s", { role: "assistant", content: "after the lock" });
    // The append retries asynchronously (this polling runs between its attempts)...
    await until(() => busyRetryStats().retries >= retriesBefore + 2, 5_000, "the append to retry");
    // ...and a read is answered while the lock is held and the append still waits. A read that
    // queued behind the writer could never be: the lock goes only after it.
    expect(contents(await db.getMessages("s"))).toEqual(["before"]);
    expect(await hasSettled(append)).toBe(false);
    lock.release();
    expect(typeof (await append)).toBe("number");
    expect(contents(await db.getMessages("s"))).toEqual(["before", "after the lock"]);
  });

  it("opening an already migrated database does not queue behind the writer", async () => {
    const first = store.open();
    await first.createSession("s", { source: "t" });
    const lock = takeWriteLock(store.path);
    // Opened and read while the lock is held: an open that queued behind it would wait out its
    // busy timeout and throw SQLITE_BUSY, since the lock goes only after it.
    const second = store.open();
    expect(await second.getSession("s")).not.toBeNull();
    lock.release();
  });

  it("gives up with SQLITE_BUSY once the retry deadline passes", async () => {
    const db = store.open({ busyRetryDeadlineMs: 150 });
    await db.createSession("s", { source: "t" });
    const lock = takeWriteLock(store.path);
    await expect(db.appendMessage("s", { role: "user", content: "x" })).rejects.toMatchObject({ code: expect.stringMatching(/^SQLITE_BUSY/) });
    lock.release();
    expect(await db.getMessages("s")).toEqual([]);
  });
});
