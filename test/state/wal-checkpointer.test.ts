// WAL checkpoints in a background thread: commits on the store's connection never copy pages into
// the database file (that is the slow, fsyncing part); the thread does, on its interval and when
// the store closes. A thread that cannot run hands checkpointing back to SQLite.
import { statSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { busyRetryStats } from "../../src/state/busy-retry.js";
import { DEFAULT_RESTART_AFTER_FRAMES, WalCheckpointer, walRewindStats } from "../../src/state/wal-checkpointer.js";
import { waitFor } from "../support/gateway.js";
import { tempStore, type TempStore } from "./helpers.js";

let store: TempStore;
beforeEach(() => {
  store = tempStore("sb-wal");
});
afterEach(async () => {
  await store.cleanup();
});

const fileSize = (path: string): number => statSync(path).size;

/** About 4 MB of transcript in 200 commits. */
async function writeTranscript(db: ReturnType<TempStore["open"]>, sessionId: string): Promise<void> {
  await db.createSession(sessionId, { source: "test" });
  const text = "x".repeat(2_000);
  for (let batch = 0; batch < 200; batch++) {
    await db.appendMessagesBatch(
      sessionId,
      Array.from({ length: 10 }, (_, i) => ({ role: i % 2 === 0 ? "user" : "assistant", content: `${batch}-${i} ${text}`, timestamp: batch })),
    );
  }
}

describe("background WAL checkpoints", () => {
  it("keeps checkpoints out of commits; the thread copies the pages, at the latest when the store closes", async () => {
    // An interval far beyond the test: only the final checkpoint at close can run.
    const db = store.open({ backgroundCheckpointMs: 600_000 });
    const before = fileSize(store.path);
    await writeTranscript(db, "s-1");
    // 4 MB went through the WAL (SQLite's automatic checkpoint would have run every 1,000 pages).
    expect(fileSize(`${store.path}-wal`)).toBeGreaterThan(4_000_000);
    expect(fileSize(store.path)).toBe(before);
    await db.close();
    expect(fileSize(store.path)).toBeGreaterThan(4_000_000);
    // Nothing was lost on the way.
    const reopened = store.open();
    expect(await reopened.getMessages("s-1")).toHaveLength(2_000);
  });

  it("a connection told another thread checkpoints keeps checkpoints out of its commits too, up to its bound", async () => {
    // SQLite's own: a checkpoint inside the commit that takes the WAL past 1,000 frames.
    const own = store.open();
    const before = fileSize(store.path);
    await writeTranscript(own, "s-own");
    expect(fileSize(store.path)).toBeGreaterThan(before + 1_000_000);
    await own.close();

    const other = tempStore("sb-wal-elsewhere");
    try {
      const elsewhere = other.open({ checkpointedElsewhere: true });
      const empty = fileSize(other.path);
      await writeTranscript(elsewhere, "s-elsewhere");
      expect(fileSize(`${other.path}-wal`)).toBeGreaterThan(4_000_000);
      expect(fileSize(other.path)).toBe(empty);
      expect(await elsewhere.getMessages("s-elsewhere")).toHaveLength(2_000);
      await elsewhere.close();
    } finally {
      await other.cleanup();
    }

    // The bound: four times the rewind point (here 100 frames), should the other thread stop.
    const bounded = tempStore("sb-wal-bounded");
    try {
      const db = bounded.open({ checkpointedElsewhere: true, walRestartFrames: 100 });
      const empty = fileSize(bounded.path);
      await writeTranscript(db, "s-bounded");
      expect(fileSize(bounded.path)).toBeGreaterThan(empty + 1_000_000);
      await db.close();
    } finally {
      await bounded.cleanup();
    }
  });

  it("checkpoints on its interval while the store stays open", async () => {
    const db = store.open({ backgroundCheckpointMs: 20 });
    await writeTranscript(db, "s-2");
    await waitFor(() => fileSize(store.path) > 4_000_000, 10_000, "the database file to receive the checkpointed pages");
    expect(await db.getMessages("s-2")).toHaveLength(2_000);
  });

  it("keeps the WAL bounded under steady writes: the log is rewound, not grown", async () => {
    const db = store.open({ backgroundCheckpointMs: 10, walRestartFrames: 500 });
    await db.createSession("s-3", { source: "test" });
    const text = "y".repeat(4_000);
    // About 40 MB in commits a millisecond apart, like a busy gateway's: a passive checkpoint
    // alone never sees the log fully copied when the next write starts, so without the rewind
    // the log would end up holding all of it.
    const until = Date.now() + 20_000;
    for (let batch = 0; batch < 1_000 && Date.now() < until; batch++) {
      await new Promise((resolve) => setTimeout(resolve, 1));
      await db.appendMessagesBatch(
        "s-3",
        Array.from({ length: 10 }, (_, i) => ({ role: i % 2 === 0 ? "user" : "assistant", content: `${batch}-${i} ${text}`, timestamp: batch })),
      );
    }
    expect(await db.getMessages("s-3")).toHaveLength(10_000);
    expect(fileSize(`${store.path}-wal`)).toBeLessThan(16_000_000);
  });

  it("by default rewinds the log once it holds 128 MB (a rewind holds the write lock while it syncs), not before", async () => {
    const db = store.open({ backgroundCheckpointMs: 10 });
    await db.createSession("s-default", { source: "test" });
    const text = "d".repeat(16_000);
    const before = walRewindStats().rewinds;
    let batch = 0;
    // Steady commits, about 170 KB each, until the thread rewinds the log.
    await waitFor(
      async () => {
        await db.appendMessagesBatch("s-default", Array.from({ length: 10 }, (_, i) => ({ role: i % 2 === 0 ? "user" : "assistant", content: `${batch}-${i} ${text}`, timestamp: batch })));
        batch++;
        return walRewindStats().rewinds > before;
      },
      30_000,
      "a rewind",
      1,
    );
    // Past the default bound of 32,768 frames (128 MB of 4 KB pages), not at the old 8,192.
    expect(walRewindStats().lastAtFrames).toBeGreaterThan(DEFAULT_RESTART_AFTER_FRAMES);
    expect(DEFAULT_RESTART_AFTER_FRAMES).toBe(32_768);
    expect(await db.getMessages("s-default")).toHaveLength(batch * 10);
  });

  it("trims a log a burst grew back to one and a half times the rewind point once it is rewound, and no further", async () => {
    // 400 frames: trimmed back to 400 x 4 KB x 1.5 = 2.4 MB.
    const db = store.open({ backgroundCheckpointMs: 10, walRestartFrames: 400 });
    await db.createSession("s-burst", { source: "test" });
    // One commit of about 8 MB: the log grows to hold it whole.
    const big = "b".repeat(8_000);
    await db.appendMessagesBatch("s-burst", Array.from({ length: 1_000 }, (_, i) => ({ role: i % 2 === 0 ? "user" : "assistant", content: `${i} ${big}`, timestamp: i })));
    expect(fileSize(`${store.path}-wal`)).toBeGreaterThan(8_000_000);
    const rewindsBefore = walRewindStats().rewinds;
    let batch = 0;
    // Small commits until the log has been rewound and a commit has started it over.
    await waitFor(
      async () => {
        await db.appendMessagesBatch("s-burst", [{ role: "user", content: `small ${batch++}`, timestamp: batch }]);
        return walRewindStats().rewinds > rewindsBefore && fileSize(`${store.path}-wal`) < 8_000_000;
      },
      20_000,
      "the log rewound and trimmed",
      5,
    );
    const trimmed = fileSize(`${store.path}-wal`);
    expect(trimmed).toBeLessThanOrEqual(400 * 4096 * 1.5);
    // Trimmed to the limit, not emptied: a log rewound under steady writes is reused in place.
    expect(trimmed).toBeGreaterThan(400 * 4096);
  });

  it("rewinds the log without turning this process's writers away: they wait at the write gate, never on SQLITE_BUSY", async () => {
    const db = store.open({ backgroundCheckpointMs: 5, walRestartFrames: 200 });
    await db.createSession("s-4", { source: "test" });
    const text = "z".repeat(4_000);
    const retriesBefore = busyRetryStats().retries;
    let largestLog = 0;
    // About 12 MB in small commits: the log passes its bound again and again, and is rewound each time.
    for (let batch = 0; batch < 300; batch++) {
      await new Promise((resolve) => setTimeout(resolve, 1));
      await db.appendMessagesBatch("s-4", Array.from({ length: 10 }, (_, i) => ({ role: i % 2 === 0 ? "user" : "assistant", content: `${batch}-${i} ${text}`, timestamp: batch })));
      largestLog = Math.max(largestLog, fileSize(`${store.path}-wal`));
    }
    expect(await db.getMessages("s-4")).toHaveLength(3_000);
    expect(busyRetryStats().retries - retriesBefore).toBe(0);
    // Rewound, not grown: the whole run's 12 MB never sat in the log at once.
    expect(largestLog).toBeLessThan(6_000_000);
  });

  it("reports a thread that cannot open the database, as an error with its message (the store then goes back to SQLite's own checkpoints)", async () => {
    const failure = await new Promise<Error>((resolve) => {
      WalCheckpointer.start(join(store.dir, "no-such-file.db"), { intervalMs: 10, onFailure: resolve });
    });
    expect(failure.message).toMatch(/unable to open|no such file|SQLITE_CANTOPEN|directory does not exist/i);
  });
});
