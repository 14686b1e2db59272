// Compaction through the gateway: past the configured size a conversation is summarised into a
// child session; turns carry on there, every message is answered, and the API says where.
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify as toYaml } from "yaml";
import { signWebhook } from "../../src/adapters/webhook/index.js";
import { startCallbackReceiver, type CallbackReceiver } from "../platforms/support/callback-receiver.js";
import { startTestGateway, waitFor, type TestGateway } from "../support/gateway.js";
import { makeTempDir } from "../support/tmp.js";
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

describe("replies after a compaction", () => {
  let receiver: CallbackReceiver;
  let gw: TestGateway;
  let configDir: ReturnType<typeof makeTempDir>;
  const SECRET = `whsec_${randomBytes(24).toString("base64")}`;

  beforeAll(async () => {
    receiver = await startCallbackReceiver();
    configDir = makeTempDir("sb-compaction-callbacks");
    const configFile = join(configDir.dir, "switchboard.yaml");
    writeFileSync(configFile, toYaml({ webhooks: { notes: { secret: SECRET, style: "standard", reply: "callback", callback_url: receiver.url } } }));
    gw = await startTestGateway({
      http: true,
      workers: true,
      env: { SWITCHBOARD_CONFIG: configFile, COMPACTION_MAX_CHARS: "600", COMPACTION_KEEP_RECENT: "4", LOG_LEVEL: "silent" },
    });
  }, 60_000);
  afterAll(async () => {
    await gw?.stop();
    await receiver?.close();
    configDir?.cleanup();
  });

  it("are sent at once, not when the reconciler next looks (the ledger rows belong to the tip)", async () => {
    for (let i = 0; i < 8; i++) {
      const id = `compacting-${i}`;
      const body = JSON.stringify({ chat_id: "one-room", user_id: "u-1", text: `message ${i}: ${"a fairly long line of conversation ".repeat(3)}` });
      const res = await fetch(`${gw.gateway.url}/webhooks/notes`, {
        method: "POST",
        headers: { "content-type": "application/json", ...signWebhook("standard", SECRET, body, { id }) },
        body,
      });
      expect(res.status).toBe(202);
      // The reconciler runs every 30 s: a reply that waited for it would miss this window.
      const callback = await waitFor(
        () => receiver.received.find((r) => (JSON.parse(r.body.toString("utf8")) as { in_reply_to?: string }).in_reply_to === id),
        10_000,
        `the reply to ${id}`,
      );
      expect(callback.body.toString("utf8")).toContain(`message ${i}:`);
    }
    const row = await gw.gateway.store.findInboxRow("webhook", "notes:compacting-0");
    expect(row).not.toBeNull();
    expect(await gw.gateway.store.resolveTip(row!.session_id)).not.toBe(row!.session_id);
  }, 120_000);
});
