// Which running turns an interrupt request reaches: the busy-mode bound, and the age of a request
// caught up after a reconnect against the age of each turn.
import { describe, expect, it } from "vitest";
import { isInterruptFor } from "../../src/gateway/turn-worker.js";

describe("isInterruptFor", () => {
  it("reaches every turn of the session when it is live and unbounded", () => {
    expect(isInterruptFor({ sessionId: "s" }, { inboxIds: [7], ageMs: 0 })).toBe(true);
    expect(isInterruptFor({ sessionId: "s", hard: true }, { inboxIds: [], ageMs: 60_000 })).toBe(true);
  });

  it("in busy mode 'interrupt', reaches only turns working on older input", () => {
    expect(isInterruptFor({ sessionId: "s", beforeInboxId: 10 }, { inboxIds: [9], ageMs: 5 })).toBe(true);
    expect(isInterruptFor({ sessionId: "s", beforeInboxId: 10 }, { inboxIds: [10, 11], ageMs: 5 })).toBe(false);
  });

  it("a request caught up after a reconnect reaches turns that were already running when it was published", () => {
    expect(isInterruptFor({ sessionId: "s", ageMs: 5_000 }, { inboxIds: [1], ageMs: 8_000 })).toBe(true);
    // Clocks read moments apart: a turn that began just around the publication still counts.
    expect(isInterruptFor({ sessionId: "s", ageMs: 5_000 }, { inboxIds: [1], ageMs: 4_900 })).toBe(true);
  });

  it("a request caught up after a reconnect does not stop a turn that began after it was published", () => {
    expect(isInterruptFor({ sessionId: "s", ageMs: 5_000 }, { inboxIds: [2], ageMs: 1_000 })).toBe(false);
  });
});
