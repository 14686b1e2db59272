// A session with a long queue must not hold every worker slot: jobs for a conversation whose
// turn is running yield at once (the running turn drains its inbox), so other sessions run.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestGateway, waitFor, type TestGateway } from "../support/gateway.js";
import { inbound } from "../support/messages.js";

describe("fairness between sessions", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ http: false, workers: true, env: { WORKER_CONCURRENCY: "4", ECHO_CHUNK_DELAY_MS: "25" } });
  }, 60_000);
  afterAll(async () => {
    await gw?.stop();
  });

  it("answers another session's message while a flooded session works through its queue, and loses nothing", async () => {
    const { ingress, store } = gw.gateway;
    const flood = [];
    for (let i = 0; i < 30; i++) flood.push(await ingress.accept(inbound("flooded", `flood message number ${i}`)));
    const first = flood[0];
    if (first.status !== "accepted") throw new Error("not accepted");
    await waitFor(() => store.getSessionTurnLease(first.sessionId), 10_000, "the flood to start");

    const other = await ingress.accept(inbound("quiet", "may I go first"));
    if (other.status !== "accepted") throw new Error("not accepted");
    await ingress.waitForOutcome(other.inboxId, 10_000);
    // When the quiet session is answered, most of the flood is still queued.
    const stillQueued = (await store.pendingInbox(first.sessionId, 100)).length;
    expect(stillQueued).toBeGreaterThan(15);

    // And the flood is answered completely, in order, once each.
    const last = flood[flood.length - 1];
    if (last.status !== "accepted") throw new Error("not accepted");
    await ingress.waitForOutcome(last.inboxId, 30_000);
    await waitFor(async () => (await store.pendingInbox(first.sessionId, 1)).length === 0, 10_000, "the flood to drain");
    const rows = await store.getMessages(await store.resolveTip(first.sessionId));
    expect(rows.filter((m) => m.role === "user").map((m) => m.content)).toEqual(Array.from({ length: 30 }, (_, i) => `flood message number ${i}`));
    expect(rows.filter((m) => m.role === "assistant")).toHaveLength(30);
  }, 60_000);
});
