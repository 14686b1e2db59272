// A new message's wake-up carries its platform, so its turn reads nothing before the lease (the
// lease's transaction reads the head) and nothing after (the release's transaction reads the
// next head). Messages that arrive while a turn runs are still answered, in order.
import { afterEach, describe, expect, it, vi } from "vitest";
import type { AcceptResult } from "../../src/gateway/types.js";
import { startTestGateway, type TestGateway } from "../support/gateway.js";
import { inbound } from "../support/messages.js";

function accepted(result: AcceptResult): { inboxId: number; sessionId: string } {
  if (result.status !== "accepted") throw new Error(`not accepted: ${result.status}`);
  return result;
}

// The test's own ingress hands wake-ups to its workers in memory only when it serves HTTP too.
describe.each([
  { wakeUps: "in memory", inProcessWakeUps: true },
  { wakeUps: "as BullMQ jobs", inProcessWakeUps: false },
])("turn wake-ups $wakeUps", ({ inProcessWakeUps }) => {
  let gw: TestGateway | null = null;
  afterEach(async () => {
    await gw?.stop();
    gw = null;
  });

  it("run a new message's turn without a read before its lease or after its release", async () => {
    gw = await startTestGateway({ http: inProcessWakeUps, workers: true, inProcessWakeUps });
    const { ingress, store } = gw.gateway;
    const reads = vi.spyOn(store, "wakeUpView");
    for (const conversation of ["wr-a", "wr-b", "wr-c"]) {
      const row = accepted(await ingress.accept(inbound(conversation, `hello ${conversation}`)));
      const outcome = await ingress.waitForOutcome(row.inboxId, 20_000, row.sessionId);
      expect(outcome.reply).toContain(`hello ${conversation}`);
    }
    expect(reads).not.toHaveBeenCalled();
  }, 40_000);

  it("answers every message of a conversation that arrive while its turns run, in order", async () => {
    gw = await startTestGateway({ http: inProcessWakeUps, workers: true, inProcessWakeUps, env: { ECHO_CHUNK_DELAY_MS: "20" } });
    const { ingress, store } = gw.gateway;
    const rows = [];
    for (let i = 0; i < 6; i++) rows.push(accepted(await ingress.accept(inbound("wr-burst", `burst ${i}`))));
    for (const row of rows) expect((await ingress.waitForOutcome(row.inboxId, 30_000, row.sessionId)).status).toBe("done");
    const users = (await store.getMessages(await store.resolveTip(rows[0].sessionId))).filter((m) => m.role === "user").map((m) => m.content);
    expect(users).toEqual(rows.map((_, i) => `burst ${i}`));
  }, 60_000);
});
