// Each turn's model usage on both store backends: written by the turn's fenced flush (one
// statement, or step by step with attachments), never by a holder that lost the lease, and summed
// per model with filters on platform, user and time.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { SessionStore, UsageInsert } from "../../src/state/types.js";
import { storeBackends, type TestStore } from "../support/store-backends.js";

const usageOf = (over: Partial<UsageInsert>): UsageInsert => ({
  platform: "telegram", sessionId: "s1", userId: "u1", inboxId: null, model: "m1", modelCalls: 1, promptTokens: 10, completionTokens: 5, toolCalls: 0, ...over,
});
const PNG = Buffer.from("89504e470d0a1a0a0000000d49484452", "hex");

describe.each(storeBackends)("turn usage on $name", (backend) => {
  let db: TestStore;
  let store: SessionStore;
  let clock: number;
  beforeEach(async () => {
    db = backend.create("usage");
    clock = 1_000;
    store = await db.open({ now: () => clock });
    await store.createSession("s1", { source: "telegram" });
    expect(await store.tryAcquireSessionTurnLease("s1", "holder-a", { ttlSeconds: 60 })).toBe(true);
  });
  afterEach(async () => {
    await db.cleanup();
  });

  it("records usage with the fenced flush, and sums it per model with filters", async () => {
    const reply = { role: "assistant" as const, content: "hi", timestamp: clock };
    await store.flushTurn("s1", [reply], { turnLeaseHolder: "holder-a", endRecords: { usage: usageOf({}) } });
    clock = 2_000;
    await store.flushTurn("s1", [reply], { turnLeaseHolder: "holder-a", endRecords: { usage: usageOf({ model: "m2", promptTokens: 100, completionTokens: 50, toolCalls: 2, modelCalls: 3 }) } });
    // With an image: the step-by-step flush records it too.
    const withImage = { role: "user" as const, content: "look", timestamp: clock, attachments: [{ content_type: "image/png", size_bytes: PNG.length, name: null, data: PNG }] };
    await store.flushTurn("s1", [withImage], { turnLeaseHolder: "holder-a", endRecords: { usage: usageOf({ userId: "u2", platform: "slack" }) } });
    // A holder without the lease writes nothing, usage included.
    await expect(store.flushTurn("s1", [reply], { turnLeaseHolder: "holder-b", endRecords: { usage: usageOf({ promptTokens: 1_000 }) } })).rejects.toThrow();

    expect(await store.usageTotals({})).toEqual([
      { model: "m2", turns: 1, model_calls: 3, prompt_tokens: 100, completion_tokens: 50, tool_calls: 2 },
      { model: "m1", turns: 2, model_calls: 2, prompt_tokens: 20, completion_tokens: 10, tool_calls: 0 },
    ]);
    expect(await store.usageTotals({ platform: "telegram", userId: "u1" })).toHaveLength(2);
    expect(await store.usageTotals({ platform: "slack" })).toEqual([{ model: "m1", turns: 1, model_calls: 1, prompt_tokens: 10, completion_tokens: 5, tool_calls: 0 }]);
    expect(await store.usageTotals({ since: 1_500 })).toEqual([
      { model: "m2", turns: 1, model_calls: 3, prompt_tokens: 100, completion_tokens: 50, tool_calls: 2 },
      { model: "m1", turns: 1, model_calls: 1, prompt_tokens: 10, completion_tokens: 5, tool_calls: 0 },
    ]);
    expect(await store.usageTotals({ userId: "nobody" })).toEqual([]);
  });
});
