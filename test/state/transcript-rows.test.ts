// The transcript rows a SQLite connection remembers (state/transcript-rows.ts): later reads ask
// only for rows after the last one held, within a bound; and through SessionDB, on a real file,
// a transcript read again sees what another connection appended.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { StoredMessageTuple } from "../../src/state/conversation.js";
import { SessionDB } from "../../src/state/session-db.js";
import { rowBytes, TranscriptRows } from "../../src/state/transcript-rows.js";

const row = (id: number, content = `m${id}`): StoredMessageTuple => [id, "user", content, null, null, null, null, id, null, null, null, null];
/** The weight of `n` rows like row(1)..row(9). */
const rowsWeight = (n: number): number => n * rowBytes(row(1));

describe("TranscriptRows", () => {
  it("asks only for the rows after the last one it holds, and returns them all in order", () => {
    const cache = new TranscriptRows();
    const asked: number[] = [];
    const stored = [row(1), row(2)];
    const readAfter = (afterId: number) => {
      asked.push(afterId);
      return stored.filter((r) => r[0] > afterId);
    };
    expect(cache.read("s", readAfter).map((r) => r[0])).toEqual([1, 2]);
    stored.push(row(5));
    expect(cache.read("s", readAfter).map((r) => r[0])).toEqual([1, 2, 5]);
    expect(cache.read("s", readAfter).map((r) => r[0])).toEqual([1, 2, 5]);
    expect(asked).toEqual([0, 2, 5]);
  });

  it("withinWrite: a step that throws forgets the transcripts it read, and only those", () => {
    const cache = new TranscriptRows();
    const readAfter = (afterId: number) => [row(1), row(2)].filter((r) => r[0] > afterId);
    cache.read("held", readAfter);
    // Failed before it read anything (SQLITE_BUSY at BEGIN): everything stays held.
    expect(() => cache.withinWrite(() => { throw new Error("busy"); })).toThrow("busy");
    expect(cache.holds("held")).toBe(true);
    // Read inside, then rolled back: that transcript may hold the step's own rows, so it goes.
    expect(() =>
      cache.withinWrite(() => {
        cache.read("read-inside", readAfter);
        throw new Error("constraint");
      }),
    ).toThrow("constraint");
    expect(cache.holds("read-inside")).toBe(false);
    expect(cache.holds("held")).toBe(true);
    expect(cache.heldRows).toBe(2);
    // A step that commits keeps what it read.
    expect(cache.withinWrite(() => cache.read("committed", readAfter).length)).toBe(2);
    expect(cache.holds("committed")).toBe(true);
  });

  it("readChecked: reads everything first, then the rows after the last one held with the count held, and everything again when the count is off", async () => {
    const cache = new TranscriptRows();
    const stored = [row(1), row(3)];
    const calls: string[] = [];
    const readAfter = async (afterId: number, heldCount: number) => {
      calls.push(`after ${afterId} held ${heldCount}`);
      // What the database sees: the rows up to afterId must be the heldCount the cache holds.
      if (stored.filter((r) => Number(r[0]) <= afterId).length !== heldCount) return null;
      return stored.filter((r) => Number(r[0]) > afterId);
    };
    const readAll = async () => {
      calls.push("all");
      return stored.slice();
    };
    expect((await cache.readChecked("s", readAfter, readAll)).map((r) => r[0])).toEqual([1, 3]);
    stored.push(row(4));
    expect((await cache.readChecked("s", readAfter, readAll)).map((r) => r[0])).toEqual([1, 3, 4]);
    // Row 2 commits late, below the last id held: the count up to 4 is 4, not the 3 held.
    stored.splice(1, 0, row(2));
    expect((await cache.readChecked("s", readAfter, readAll)).map((r) => r[0])).toEqual([1, 2, 3, 4]);
    expect((await cache.readChecked("s", readAfter, readAll)).map((r) => r[0])).toEqual([1, 2, 3, 4]);
    expect(calls).toEqual(["all", "after 3 held 2", "after 4 held 3", "all", "after 4 held 4"]);
  });

  it("warm: a transcript too long to hold is handed to the session's next read alone, which asks only for newer rows", () => {
    const cache = new TranscriptRows(rowsWeight(3));
    const stored = [row(1), row(2), row(3), row(4)];
    const asked: string[] = [];
    const readAfter = (session: string) => (afterId: number) => {
      asked.push(`${session} after ${afterId}`);
      return stored.filter((r) => r[0] > afterId);
    };
    cache.warm("s", readAfter("s"));
    expect(cache.holds("s")).toBe(false);
    stored.push(row(7));
    expect(cache.read("s", readAfter("s")).map((r) => r[0])).toEqual([1, 2, 3, 4, 7]);
    // Handed on once: the read after that starts again from the first row.
    expect(cache.read("s", readAfter("s")).map((r) => r[0])).toEqual([1, 2, 3, 4, 7]);
    expect(asked).toEqual(["s after 0", "s after 4", "s after 0"]);

    // At most two wait at once; a third drops them. A write that took what waited and then rolled
    // back leaves nothing of it: the next read starts again from the first row.
    asked.length = 0;
    for (const session of ["a", "b", "c"]) cache.warm(session, readAfter(session));
    cache.read("a", readAfter("a"));
    cache.read("c", readAfter("c"));
    cache.warm("d", readAfter("d"));
    expect(() =>
      cache.withinWrite(() => {
        cache.read("d", readAfter("d"));
        throw new Error("rolled back");
      }),
    ).toThrow("rolled back");
    cache.read("d", readAfter("d"));
    expect(asked).toEqual(["a after 0", "b after 0", "c after 0", "a after 0", "c after 7", "d after 0", "d after 7", "d after 0"]);
  });

  it("warm: a transcript it can hold is simply held", () => {
    const cache = new TranscriptRows();
    const asked: number[] = [];
    cache.warm("s", (afterId) => {
      asked.push(afterId);
      return afterId === 0 ? [row(1), row(2)] : [];
    });
    expect(cache.holds("s")).toBe(true);
    cache.read("s", (afterId) => {
      asked.push(afterId);
      return [];
    });
    expect(asked).toEqual([0, 2]);
  });

  it("keeps at most its bound of bytes, dropping the least recently read sessions first", () => {
    const cache = new TranscriptRows(rowsWeight(4));
    const rows = (n: number) => () => Array.from({ length: n }, (_, i) => row(i + 1));
    cache.read("a", rows(2));
    cache.read("b", rows(2));
    cache.read("a", () => []); // a is now the most recent
    cache.read("c", rows(2)); // over the bound: b goes
    expect(cache.heldRows).toBe(4);
    expect(cache.heldBytes).toBe(rowsWeight(4));
    const askedAfter: number[] = [];
    const spy = (afterId: number) => {
      askedAfter.push(afterId);
      return [];
    };
    cache.read("a", spy);
    cache.read("b", spy);
    expect(askedAfter).toEqual([2, 0]);
    // A transcript longer than the bound is read whole every time, never kept.
    const big = new TranscriptRows(rowsWeight(3));
    big.read("x", rows(5));
    expect(big.heldRows).toBe(0);
  });

  it("weighs rows by their text: a few long messages take the room of many short ones", () => {
    const long = "x".repeat(2_000);
    expect(rowBytes(row(1, long)) - rowBytes(row(1, ""))).toBe(2_000);
    // Room for the two long rows and five short ones.
    const cache = new TranscriptRows(2 * rowBytes(row(1, long)) + rowsWeight(5));
    cache.read("short", () => Array.from({ length: 10 }, (_, i) => row(i + 1)));
    cache.read("long", () => [row(1, long), row(2, long)]);
    // Twelve rows in all, but the two long ones weigh more than the room the ten short ones left.
    expect(cache.holds("short")).toBe(false);
    expect(cache.holds("long")).toBe(true);
    expect(cache.heldBytes).toBe(2 * rowBytes(row(1, long)));
    // Rows added later count too: the held weight grows with them.
    cache.read("long", () => [row(3)]);
    expect(cache.heldBytes).toBe(2 * rowBytes(row(1, long)) + rowBytes(row(3)));
  });

  it("holds fifty conversations of six hundred short messages within its default bound", () => {
    const cache = new TranscriptRows();
    const message = (id: number): StoredMessageTuple => [id, id % 2 ? "user" : "assistant", `ingress message ${id}`, null, null, null, null, id, `delivery-${id}`, null, null, "stop"];
    for (let round = 0; round < 2; round++) {
      for (let c = 0; c < 50; c++) cache.read(`c${c}`, (afterId) => (afterId === 0 ? Array.from({ length: 600 }, (_, i) => message(i + 1)) : []));
    }
    expect(cache.heldRows).toBe(30_000);
    for (let c = 0; c < 50; c++) expect(cache.holds(`c${c}`)).toBe(true);
  });

  it("returns a copy the caller may change", () => {
    const cache = new TranscriptRows();
    const first = cache.read("s", () => [row(1)]);
    first.pop();
    expect(cache.read("s", () => []).length).toBe(1);
  });
});

describe("SessionDB transcript reads", () => {
  let dir: string | null = null;
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
    dir = null;
  });

  it("reads again what another connection appended; a failed fenced flush leaves the transcript whole", async () => {
    dir = mkdtempSync(join(tmpdir(), "transcript-rows-"));
    const path = join(dir, "s.db");
    const reader = new SessionDB(path);
    const writer = new SessionDB(path);
    try {
      await writer.createSession("s", { source: "t" });
      await writer.appendMessage("s", { role: "user", content: "one" });
      const read = async () => (await reader.getMessagesAsConversation("s", { repairAlternation: true })).map((m) => m.content);
      expect(await read()).toEqual(["one"]);
      await writer.appendMessagesBatch("s", [
        { role: "assistant", content: "two" },
        { role: "user", content: "three" },
      ]);
      expect(await read()).toEqual(["one", "two", "three"]);
      // A fenced flush that fails writes nothing, and the reader's next read is still whole.
      await expect(reader.appendMessagesBatch("s", [{ role: "assistant", content: "fenced" }], { turnLeaseHolder: "nobody" })).rejects.toThrow();
      expect(await read()).toEqual(["one", "two", "three"]);
    } finally {
      await reader.close();
      await writer.close();
    }
  });
});
