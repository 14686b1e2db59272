// Compaction through the gateway: past the configured size a conversation is summarised into a
// child session; turns carry on there, every message is answered, and the API says where.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestGateway, type TestGateway } from "../support/gateway.js";
import { inbound } from "../support/messages.js";

describe("compaction in the gateway", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ http: true, workers: true, env: { COMPACTION_MAX_CHARS: "600", COMPACTION_KEEP_RECENT: "4" } });
  }, 60_000);
  afterAll(async () => {
    await gw?.stop();
  });

  it("moves a long conversation into a child session and keeps answering in it", async () => {
    const { ingress, store } = gw.gateway;
    const texts = Array.from({ length: 8 }, (_, i) => `message ${i}: ${"a fairly long line of conversation ".repeat(3)}`);
    const inboxIds: number[] = [];
    for (const text of texts) {
      const r = await ingress.accept(inbound("compact", text, { sessionId: "compact-me", sessionKey: "test:compact-me" }));
      if (r.status !== "accepted") throw new Error("not accepted");
      inboxIds.push(r.inboxId);
      const outcome = await ingress.waitForOutcome(r.inboxId, 20_000);
      expect(outcome.status).toBe("done");
      expect(outcome.reply).toContain(`message ${inboxIds.length - 1}:`);
    }
    const tip = await store.resolveTip("compact-me");
    expect(tip).not.toBe("compact-me");
    expect((await store.getSession("compact-me"))?.end_reason).toBe("compression");
    expect(await store.conversationIdOf(tip)).toBe("compact-me");
    const child = await store.getMessages(tip);
    expect(child.some((m) => m.display_kind === "compaction_summary")).toBe(true);
    expect(child.at(-1)?.content).toContain("message 7:");

    const res = await fetch(`${gw.gateway.url}/api/sessions/compact-me/messages`);
    const body = (await res.json()) as { session_id: string; continued_in?: string };
    expect(body).toMatchObject({ session_id: "compact-me", continued_in: tip });
  }, 60_000);
});
