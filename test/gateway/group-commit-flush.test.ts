// GroupCommit's timing (gateway/group-commit.ts): a batch goes at the end of the event loop's
// pass, or within the pass once its first item has waited flushAfterMs, so a pass that reads a
// flood of requests answers its first callers before it ends.
import { describe, expect, it } from "vitest";
import { GroupCommit, type Settled } from "../../src/gateway/group-commit.js";

/** A commit that notes each batch and answers every item with itself doubled. */
function recordingCommit(): { batches: number[][]; commit: (items: number[]) => Promise<Array<Settled<number>>> } {
  const batches: number[][] = [];
  return {
    batches,
    commit: (items) => {
      batches.push([...items]);
      return Promise.resolve(items.map((item) => ({ ok: true as const, value: item * 2 })));
    },
  };
}

/** Keeps this thread busy, as a pass reading many requests does. */
function busyFor(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // spin
  }
}

describe("GroupCommit timing", () => {
  it("commits the items of a short pass together at its end", async () => {
    const { batches, commit } = recordingCommit();
    const group = new GroupCommit(commit, { flushAfterMs: 50 });
    const answers = [1, 2, 3].map((item) => group.submit(item));
    expect(batches).toEqual([]);
    expect(await Promise.all(answers)).toEqual([2, 4, 6]);
    expect(batches).toEqual([[1, 2, 3]]);
  });

  it("sends a batch within a long pass once its first item has waited flushAfterMs, and gathers the rest afresh", async () => {
    const { batches, commit } = recordingCommit();
    const group = new GroupCommit(commit, { flushAfterMs: 5 });
    const answers = [group.submit(1), group.submit(2)];
    busyFor(8);
    answers.push(group.submit(3));
    // Sent by the submit that found the batch old enough, before the pass ends.
    expect(batches).toEqual([[1, 2, 3]]);
    await Promise.resolve();
    answers.push(group.submit(4));
    busyFor(8);
    answers.push(group.submit(5));
    expect(batches).toEqual([[1, 2, 3], [4, 5]]);
    answers.push(group.submit(6));
    expect(await Promise.all(answers)).toEqual([2, 4, 6, 8, 10, 12]);
    expect(batches).toEqual([[1, 2, 3], [4, 5], [6]]);
  });

  it("does not let an early batch wait for reserved slots: their items go in a later batch", async () => {
    const { batches, commit } = recordingCommit();
    const group = new GroupCommit(commit, { flushAfterMs: 5, maxWaitMs: 1_000 });
    const slot = group.reserve();
    const first = group.submit(1);
    busyFor(8);
    const second = group.submit(2);
    expect(batches).toEqual([[1, 2]]);
    expect(await Promise.all([first, second])).toEqual([2, 4]);
    const third = slot.submit(3);
    expect(await third).toBe(6);
    expect(batches).toEqual([[1, 2], [3]]);
  });
});
