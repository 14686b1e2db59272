// Waiting for a turn's outcome (sync API replies, sync webhooks) with and without the conversation
// the caller learnt from accept(): given it, the wait listens at once instead of reading the row first.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
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
    const started = performance.now();
    const again = await ingress.waitForOutcome(accepted.inboxId, 20_000, accepted.sessionId);
    expect(again).toEqual(outcome);
    expect(performance.now() - started).toBeLessThan(900); // the read on listening, not the 1 s poll
  }, 30_000);

  it("rejects a row that does not exist, with or without a conversation", async () => {
    const { ingress } = gw.gateway;
    await expect(ingress.waitForOutcome(987_654_321, 5_000, "no-such-conversation")).rejects.toThrow("unknown inbox row 987654321");
    await expect(ingress.waitForOutcome(987_654_321, 5_000)).rejects.toThrow("unknown inbox row 987654321");
  }, 20_000);
});
