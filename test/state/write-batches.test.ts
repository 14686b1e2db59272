// Group commit of one connection's writes (state/write-batches.ts), on a real SQLite file.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { busyRetryStats, isSqliteBusy } from "../../src/state/busy-retry.js";
import { WriteBatches, type RunLocked } from "../../src/state/write-batches.js";
import { until } from "./helpers.js";

describe("WriteBatches", () => {
  let dir: string;
  let db: Database.Database;
  let lockedSteps: number;
  let batches: WriteBatches;

  const insert = (name: string) => () => db.prepare("INSERT INTO items (name) VALUES (?)").run(name).lastInsertRowid;
  const names = () => (db.prepare("SELECT name FROM items ORDER BY id").all() as Array<{ name: string }>).map((r) => r.name);
  const dataVersion = (other: Database.Database) => other.pragma("data_version", { simple: true }) as number;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "write-batches-"));
    db = new Database(join(dir, "db.sqlite"));
    db.pragma("journal_mode = WAL");
    // As the store runs it: a held lock is retried asynchronously, never waited for inside SQLite.
    db.pragma("busy_timeout = 0");
    db.exec("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)");
    lockedSteps = 0;
    const runLocked: RunLocked = async (step) => {
      lockedSteps += 1;
      return step();
    };
    batches = new WriteBatches(db, runLocked, 5_000);
  });

  afterEach(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("commits the writes of one pass of the event loop together, and answers each with its own result", async () => {
    const observer = new Database(join(dir, "db.sqlite"));
    const before = dataVersion(observer);
    const ids = await Promise.all([batches.write(insert("a")), batches.write(insert("b")), batches.write(insert("c"))]);
    // One commit by another connection moves data_version by one, whatever it wrote.
    expect(dataVersion(observer) - before).toBe(1);
    observer.close();
    expect(lockedSteps).toBe(1);
    expect(ids.map(Number)).toEqual([1, 2, 3]);
    expect(names()).toEqual(["a", "b", "c"]);
  });

  it("rolls back a failing write alone: the caller gets its error, the rest of the batch commits", async () => {
    await batches.write(insert("taken"));
    const failing = batches.write(() => {
      insert("half-done")();
      insert("taken")(); // UNIQUE constraint
    });
    const [first, second, third] = await Promise.allSettled([batches.write(insert("x")), failing, batches.write(insert("y"))]);
    expect(first.status).toBe("fulfilled");
    expect(third.status).toBe("fulfilled");
    expect(second.status).toBe("rejected");
    expect(String((second as PromiseRejectedResult).reason)).toMatch(/UNIQUE/);
    expect(names()).toEqual(["taken", "x", "y"]);
  });

  it("runs an atomic write (a transaction of its own) without a savepoint around it, and still rolls it back alone", async () => {
    await batches.write(insert("taken"));
    const both = db.transaction(() => {
      insert("half-done")();
      insert("taken")(); // UNIQUE constraint
    });
    const one = db.transaction(() => insert("z")());
    // better-sqlite3 runs a nested transaction's SAVEPOINT as a statement: count them.
    const statementProto = Object.getPrototypeOf(db.prepare("SELECT 1")) as { run: (...args: unknown[]) => unknown };
    const run = statementProto.run;
    let savepoints = 0;
    statementProto.run = function (this: { source: string }, ...args: unknown[]) {
      if (this.source.startsWith("SAVEPOINT")) savepoints += 1;
      return run.apply(this, args);
    };
    let settled: PromiseSettledResult<unknown>[];
    try {
      settled = await Promise.allSettled([batches.write(insert("x")), batches.write(() => both(), { atomic: true }), batches.write(() => one(), { atomic: true })]);
    } finally {
      statementProto.run = run;
    }
    const [first, failing, third] = settled;
    expect(first.status).toBe("fulfilled");
    expect(third.status).toBe("fulfilled");
    expect(failing.status).toBe("rejected");
    expect(names()).toEqual(["taken", "x", "z"]);
    // One for the plain write, one each inside the two transactions: none around them.
    expect(savepoints).toBe(3);
  });

  it("runs a lone write as it is (its own transaction, no savepoint) and writes of later passes in later commits", async () => {
    const own = db.transaction(() => {
      insert("p")();
      insert("q")();
    });
    await batches.write(() => own.immediate());
    await batches.write(insert("r"));
    expect(lockedSteps).toBe(2);
    expect(names()).toEqual(["p", "q", "r"]);
  });

  it("waits for another connection's write lock, then commits the whole batch", async () => {
    const other = new Database(join(dir, "db.sqlite"));
    other.exec("BEGIN IMMEDIATE");
    other.prepare("INSERT INTO items (name) VALUES ('other')").run();
    const retriesBefore = busyRetryStats().retries;
    let settled = false;
    const written = Promise.all([batches.write(insert("m")), batches.write(insert("n"))]).finally(() => (settled = true));
    // Retried while the lock is held, and not done before it goes.
    await until(() => busyRetryStats().retries >= retriesBefore + 2);
    expect(settled).toBe(false);
    other.exec("COMMIT");
    await written;
    other.close();
    expect(names()).toEqual(["other", "m", "n"]);
  });

  it("reports a busy database at once to a write that asked for it, while the rest of its batch waits", async () => {
    const other = new Database(join(dir, "db.sqlite"));
    other.exec("BEGIN IMMEDIATE");
    const waiting = batches.write(insert("waits"));
    // Reported while the lock is still held (it goes only after).
    const reported = await batches.write(insert("reports"), { busy: "report" }).then(
      () => null,
      (err: unknown) => err,
    );
    expect(isSqliteBusy(reported)).toBe(true);
    other.exec("COMMIT");
    await waiting;
    other.close();
    expect(names()).toEqual(["waits"]);
  });

  it("fails every write of a batch whose commit step fails, and writes none of them", async () => {
    const failingLock: RunLocked = () => Promise.reject(new Error("store closed"));
    const closed = new WriteBatches(db, failingLock, 5_000);
    const results = await Promise.allSettled([closed.write(insert("u")), closed.write(insert("v"))]);
    expect(results.map((r) => r.status)).toEqual(["rejected", "rejected"]);
    expect(names()).toEqual([]);
  });

  it("runs a gathered batch at once, taking along the writes queued before it, in order; the pass's scheduled run finds nothing left", async () => {
    const queued = batches.write(insert("queued first"));
    const gathered = batches.write(insert("gathered"), { now: true });
    // Committed before this pass of the event loop ends, not at its end.
    expect(names()).toEqual(["queued first", "gathered"]);
    expect(lockedSteps).toBe(1);
    expect((await Promise.all([queued, gathered])).map(Number)).toEqual([1, 2]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(lockedSteps).toBe(1);
    // A write after it is queued for the end of its pass as before.
    const later = batches.write(insert("later"));
    expect(names()).toEqual(["queued first", "gathered"]);
    await later;
    expect(lockedSteps).toBe(2);
    expect(names()).toEqual(["queued first", "gathered", "later"]);
  });

  it("ends a batch after the current write when another thread waits for the gate, and runs the rest first once that thread has been in", async () => {
    let waiting = false;
    let letIn: () => void = () => undefined;
    const turns = {
      othersWaiting: () => waiting,
      afterWaiters: () => new Promise<void>((resolve) => (letIn = resolve)),
    };
    const giving = new WriteBatches(db, async (step) => step(), 5_000, turns);
    const first = giving.write(() => {
      waiting = true; // another thread arrives at the gate during this write
      return insert("a")();
    });
    const rest = [giving.write(insert("b")), giving.write(insert("c"))];
    expect(Number(await first)).toBe(1);
    // Committed alone: the waiting thread gets the gate before b and c.
    expect(names()).toEqual(["a"]);
    waiting = false;
    const queuedMeanwhile = giving.write(insert("d"));
    await new Promise((resolve) => setImmediate(resolve));
    expect(names()).toEqual(["a"]);
    letIn();
    expect((await Promise.all([...rest, queuedMeanwhile])).map(Number)).toEqual([2, 3, 4]);
    expect(names()).toEqual(["a", "b", "c", "d"]);
  });
});
