// Waiting for a turn's outcome (sync API replies, sync webhooks) with and without the conversation
// the caller learnt from accept(): given it, the wait listens at once instead of reading the row first.
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startTestGateway, type TestGateway } from "../support/gateway.js";
import { inbound } from "../support/messages.js";

describe("waitForOutcome", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ http: false, workers: true });
  });
  afterAll(async () => {
    await gw?.stop();
  });

  it("resolves with the turn's reply when told the conversation, and again at once once it is done", async () => {
    const { ingress } = gw.gateway;
    const accepted = await ingress.accept(inbound("outcome-known", "named conversation"));
    if (accepted.status !== "accepted") throw new Error("not accepted");
    const outcome = await ingress.waitForOutcome(accepted.inboxId, 20_000, accepted.sessionId);
    expect(outcome.status).toBe("done");
    expect(outcome.reply).toContain("named conversation");
    // Answered by the read on listening, before the 1 s poll ever ran: its ticks are counted.
    const realSetInterval = globalThis.setInterval;
    let polls = 0;
    const intervals = vi.spyOn(globalThis, "setInterval").mockImplementation(((callback: () => void, ms?: number) =>
      realSetInterval(() => {
        if (ms === 1_000) polls += 1;
        callback();
      }, ms)) as typeof setInterval);
    let again;
    try {
      again = await ingress.waitForOutcome(accepted.inboxId, 20_000, accepted.sessionId);
    } finally {
      intervals.mockRestore();
    }
    expect(again).toEqual(outcome);
    expect(polls).toBe(0);
  }, 30_000);

  it("rejects a row that does not exist, with or without a conversation", async () => {
    const { ingress } = gw.gateway;
    await expect(ingress.waitForOutcome(987_654_321, 5_000, "no-such-conversation")).rejects.toThrow("unknown inbox row 987654321");
    await expect(ingress.waitForOutcome(987_654_321, 5_000)).rejects.toThrow("unknown inbox row 987654321");
  }, 20_000);
});

describe("waitForOutcome with this process's turns", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    // Ingress and workers in one gateway: a turn hands its rows' outcomes to the ingress in memory.
    gw = await startTestGateway({ http: true, workers: true });
  });
  afterAll(async () => {
    await gw?.stop();
  });

  async function outcomeWaits(source: "memory" | "row"): Promise<number> {
    const metric = await gw.gateway.metrics.registry.getSingleMetric("switchboard_outcome_waits_total")?.get();
    return metric?.values.find((v) => v.labels.source === source)?.value ?? 0;
  }

  it("answers from the outcome the turn handed over, not from the row read back", async () => {
    const { ingress, store } = gw.gateway;
    const [memoryBefore, rowBefore] = [await outcomeWaits("memory"), await outcomeWaits("row")];
    for (const text of ["first of two", "second of two"]) {
      const accepted = await ingress.accept(inbound("outcome-in-memory", text));
      if (accepted.status !== "accepted") throw new Error("not accepted");
      const outcome = await ingress.waitForOutcome(accepted.inboxId, 20_000, accepted.sessionId, { recordedNow: true });
      expect(outcome).toMatchObject({ inboxId: accepted.inboxId, sessionId: accepted.sessionId, status: "done" });
      expect(outcome.reply).toContain(text);
      // The same outcome as the row holds, its receipt time included.
      const row = await store.getInboxRow(accepted.inboxId);
      expect(outcome).toEqual({ inboxId: row?.id, sessionId: row?.session_id, status: row?.status, reply: row?.reply, receivedAt: row?.received_at });
    }
    // (A release heard later, through Redis, may still read a row it finds pending: no outcome.)
    expect(await outcomeWaits("memory")).toBe(memoryBefore + 2);
    expect(await outcomeWaits("row")).toBe(rowBefore);
  }, 30_000);

  it("reads the row of a turn it was not handed over, and only once", async () => {
    const { ingress, store } = gw.gateway;
    const accepted = await ingress.accept(inbound("outcome-read", "answered before the wait"));
    if (accepted.status !== "accepted") throw new Error("not accepted");
    const done = await ingress.waitForOutcome(accepted.inboxId, 20_000, accepted.sessionId);
    const rowBefore = await outcomeWaits("row");
    const reads = vi.spyOn(store, "getInboxRow");
    try {
      // A retry's wait: the turn is long over, so only the row can say.
      expect(await ingress.waitForOutcome(accepted.inboxId, 5_000, accepted.sessionId)).toEqual(done);
      expect(reads).toHaveBeenCalledTimes(1);
      expect(await outcomeWaits("row")).toBe(rowBefore + 1);
    } finally {
      reads.mockRestore();
    }
  }, 30_000);
});
