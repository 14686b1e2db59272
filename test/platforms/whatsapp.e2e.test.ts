// WhatsApp through a real gateway: Meta's signed webhooks in, replies out through a fake Graph
// API that checks requests as Meta does, with the turn and delivery workers, Redis, SQLite and an
// OpenAI-compatible model server (a fake, answering `Echo: <text>` unless scripted) all real.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fakeJpeg } from "../support/fake-telegram.js";
import { FakeWhatsApp, freshWaId, type FakeInboundMessage, type FakeWhatsAppCall } from "../support/fake-whatsapp.js";
import { startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai.js";
import { startTestGateway, waitFor, type TestGateway } from "../support/gateway.js";
import { HELP_TEXT } from "../../src/gateway/commands.js";
import type { DeliveryRow } from "../../src/state/types.js";
import { deliveriesOf, inboxRowOf, inboxTotal, recordEvents, settle, stampCalls, transcript } from "./support/probes.js";

const LOG_LEVEL = process.env.PLATFORMS_LOG ?? "silent";
const ACCESS_TOKEN = "EAAJB3kFAKEtokenForTestsOnlyZCZBx0a1b2c3d4e5f6";
const APP_SECRET = "d1e4b6f7a8c9e0f1a2b3c4d5e6f7a8b9";
const VERIFY_TOKEN = "switchboard-verify-3f9a";
const PHONE_NUMBER_ID = "106540352242922";

describe("WhatsApp through the gateway", () => {
  let fake: FakeWhatsApp;
  let model: FakeOpenAI;
  let gw: TestGateway;
  let base: string;
  let callTime: (call: FakeWhatsAppCall) => number;

  beforeAll(async () => {
    fake = await FakeWhatsApp.start({ accessToken: ACCESS_TOKEN, appSecret: APP_SECRET, phoneNumberId: PHONE_NUMBER_ID });
    callTime = stampCalls(fake.calls);
    model = await startFakeOpenAI({ apiKey: "model-key" });
    gw = await startTestGateway({
      env: {
        WHATSAPP_ACCESS_TOKEN: ACCESS_TOKEN,
        WHATSAPP_APP_SECRET: APP_SECRET,
        WHATSAPP_VERIFY_TOKEN: VERIFY_TOKEN,
        WHATSAPP_PHONE_NUMBER_ID: PHONE_NUMBER_ID,
        WHATSAPP_API_URL: fake.url,
        LLM_BASE_URL: model.url,
        LLM_API_KEY: "model-key",
        LLM_MODEL: "fake-model",
        LOG_LEVEL,
      },
    });
    base = gw.gateway.url as string;
  });

  afterAll(async () => {
    await gw?.stop();
    await model?.close();
    await fake?.close();
  });

  /** Waits until the reply to `message` is recorded as sent; returns its ledger row. */
  async function sentReply(message: FakeInboundMessage, timeoutMs = 10_000): Promise<DeliveryRow> {
    const row = await inboxRowOf(gw.gateway, "whatsapp", message.wamid);
    return waitFor(
      async () => (await deliveriesOf(gw.gateway, row.session_id)).find((d) => d.inbox_id === row.id && d.status === "sent"),
      timeoutMs,
      `sent reply to ${message.wamid}`,
    );
  }

  describe("webhook verification (GET)", () => {
    const verify = (query: Record<string, string>) => fetch(`${base}/whatsapp/webhook?${new URLSearchParams(query)}`);

    it("answers the challenge as plain text when the verify token matches", async () => {
      const res = await verify({ "hub.mode": "subscribe", "hub.verify_token": VERIFY_TOKEN, "hub.challenge": "1158201444" });
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toMatch(/^text\/plain/);
      expect(await res.text()).toBe("1158201444");
    });

    it("refuses a wrong verify token, or another mode, with 403 and no challenge", async () => {
      const queries: Array<Record<string, string>> = [
        { "hub.mode": "subscribe", "hub.verify_token": "not-the-token", "hub.challenge": "42" },
        { "hub.mode": "subscribe", "hub.verify_token": `${VERIFY_TOKEN}x`, "hub.challenge": "42" },
        { "hub.mode": "unsubscribe", "hub.verify_token": VERIFY_TOKEN, "hub.challenge": "42" },
        { "hub.challenge": "42" },
      ];
      for (const query of queries) {
        const res = await verify(query);
        expect(res.status, JSON.stringify(query)).toBe(403);
        const body = (await res.json()) as { error: { code: string } };
        expect(body.error.code).toBe("verification_failed");
      }
    });
  });

  it("answers a signed message once, quoting it, from the configured number, after marking it read", async () => {
    const message = fake.textMessage("what is the capital of France?");
    const res = await fake.deliver(base, fake.messagesWebhook([message]));
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ accepted: 1, duplicates: 0, rejected: 0 });

    const delivery = await sentReply(message);
    const [reply] = fake.sentTo(message.from);
    expect(fake.sentTo(message.from)).toHaveLength(1);
    expect(reply).toMatchObject({ body: "Echo: what is the capital of France?", contextId: message.wamid });
    expect(delivery).toMatchObject({ platform: "whatsapp", platform_message_id: reply.wamid, possible_duplicate: false });
    const send = fake.calls.find((c) => c.kind === "send" && (c.body?.to as string) === message.from);
    expect(send?.path).toBe(`/v21.0/${PHONE_NUMBER_ID}/messages`);
    expect(send?.authorization).toBe(`Bearer ${ACCESS_TOKEN}`);
    expect(send?.body).toEqual({
      messaging_product: "whatsapp",
      to: message.from,
      type: "text",
      text: { body: "Echo: what is the capital of France?" },
      context: { message_id: message.wamid },
    });

    // Marked read when its turn started: before the reply went out.
    expect(fake.readMarks).toContain(message.wamid);
    const read = fake.calls.find((c) => c.kind === "read" && c.body?.message_id === message.wamid);
    expect(read?.body).toEqual({ messaging_product: "whatsapp", status: "read", message_id: message.wamid });
    expect(callTime(read!)).toBeLessThanOrEqual(callTime(send!));

    const row = await inboxRowOf(gw.gateway, "whatsapp", message.wamid);
    const session = await gw.gateway.store.getSession(row.session_id);
    expect(session).toMatchObject({ source: "whatsapp", session_key: `whatsapp:${PHONE_NUMBER_ID}:${message.from}`, user_id: message.from });
    await settle(300);
    expect(fake.sentTo(message.from)).toHaveLength(1);
  });

  describe("refused without a turn", () => {
    const refusedCases: Array<{ name: string; headers: (body: string) => Record<string, string | null> }> = [
      { name: "a forged signature", headers: () => ({ "x-hub-signature-256": `sha256=${"0".repeat(64)}` }) },
      { name: "a signature made with another secret", headers: (body) => ({ "x-hub-signature-256": fake.sign(body, "not-the-app-secret") }) },
      { name: "no signature", headers: () => ({ "x-hub-signature-256": null }) },
      { name: "a sha1 signature", headers: (body) => ({ "x-hub-signature-256": fake.sign(body).replace("sha256=", "sha1=") }) },
      { name: "a signature of other bytes (the same JSON, reformatted)", headers: (body) => ({ "x-hub-signature-256": fake.sign(JSON.stringify(JSON.parse(body), null, 2)) }) },
    ];

    it.each(refusedCases)("$name -> 401", async ({ headers }) => {
      const before = await inboxTotal(gw.gateway);
      const message = fake.textMessage("this must not be answered");
      const body = fake.messagesWebhook([message]);
      const res = await fake.deliver(base, body, headers(body));
      expect(res.status).toBe(401);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe("invalid_signature");
      await settle(300);
      expect(await inboxTotal(gw.gateway)).toBe(before);
      expect(await gw.gateway.store.findInboxRow("whatsapp", message.wamid)).toBeNull();
      expect(fake.sentTo(message.from)).toHaveLength(0);
    });

    it("malformed JSON, correctly signed -> 400", async () => {
      const before = await inboxTotal(gw.gateway);
      const body = '{"object":"whatsapp_business_account","entry":[{"changes":[';
      const res = await fake.deliver(base, body);
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/JSON/);
      expect(await inboxTotal(gw.gateway)).toBe(before);
    });

    it("a signed body with one malformed message records none of its messages -> 400 naming the field", async () => {
      const before = await inboxTotal(gw.gateway);
      const good = fake.textMessage("the first message is fine");
      const bad = fake.textMessage("the second has no id");
      delete bad.message.id;
      const res = await fake.deliver(base, fake.messagesWebhook([good, bad]));
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/messages\.1\.id/);
      await settle(300);
      expect(await inboxTotal(gw.gateway)).toBe(before);
      expect(fake.sentTo(good.from)).toHaveLength(0);
    });
  });

  it("records a redelivery (and Meta's concurrent retries) as a duplicate: one turn, one reply", async () => {
    const before = await inboxTotal(gw.gateway);
    const message = fake.textMessage("how many times will you answer this?");
    const body = fake.messagesWebhook([message]);
    expect((await fake.deliver(base, body)).status).toBe(200);
    const again = await Promise.all([1, 2, 3].map(() => fake.deliver(base, body)));
    expect(again.map((r) => r.status)).toEqual([200, 200, 200]);
    for (const res of again) expect(await res.json()).toMatchObject({ accepted: 0, duplicates: 1 });
    expect(await inboxTotal(gw.gateway)).toBe(before + 1);

    await sentReply(message);
    await settle(500);
    const row = await inboxRowOf(gw.gateway, "whatsapp", message.wamid);
    expect((await transcript(gw.gateway, row.session_id)).filter((l) => l.startsWith("assistant: "))).toEqual([
      "assistant: Echo: how many times will you answer this?",
    ]);
    expect(fake.sentTo(message.from)).toHaveLength(1);
    // Later, after the reply: still a duplicate.
    expect(await (await fake.deliver(base, body)).json()).toMatchObject({ duplicates: 1 });
    await settle(300);
    expect(fake.sentTo(message.from)).toHaveLength(1);
  });

  it("records every message of one POST before answering, and answers each, in order per person", async () => {
    const alice = freshWaId();
    const bob = freshWaId();
    const messages = [
      fake.textMessage("one", alice),
      fake.textMessage("bob's only message", bob),
      fake.textMessage("two", alice),
      fake.textMessage("three", alice),
    ];
    const res = await fake.deliver(base, fake.messagesWebhook(messages));
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ accepted: 4 });
    // Recorded before the 200, in the order they came.
    const rows = await Promise.all(messages.map((m) => gw.gateway.store.findInboxRow("whatsapp", m.wamid)));
    const ids = rows.map((r) => r?.id ?? -1);
    expect(ids.every((id) => id > 0)).toBe(true);
    expect([...ids].sort((a, b) => a - b)).toEqual(ids);

    await waitFor(() => fake.sentTo(alice).length === 3 && fake.sentTo(bob).length === 1, 15_000, "four replies");
    expect(fake.sentTo(alice).map((m) => [m.body, m.contextId])).toEqual([
      ["Echo: one", messages[0].wamid],
      ["Echo: two", messages[2].wamid],
      ["Echo: three", messages[3].wamid],
    ]);
    expect(fake.sentTo(bob).map((m) => m.body)).toEqual(["Echo: bob's only message"]);
    expect(rows[0]?.session_id).toBe(rows[2]?.session_id);
    expect(rows[0]?.session_id).not.toBe(rows[1]?.session_id);
  });

  it("writes statuses to the reply's ledger row (furthest first, each with its time) and publishes reply.status", async () => {
    const message = fake.textMessage("tell me when you read this");
    expect((await fake.deliver(base, fake.messagesWebhook([message]))).status).toBe(200);
    const delivery = await sentReply(message);
    const wamid = delivery.platform_message_id as string;
    const log = await recordEvents(gw.gateway, delivery.session_id);
    try {
      // Meta's statuses come in their own POSTs and not always in order: read before delivered.
      const statuses = fake.statusWebhook([
        { wamid, status: "sent", timestamp: 1_750_000_001 },
        { wamid, status: "read", timestamp: 1_750_000_009 },
      ]);
      const res = await fake.deliver(base, statuses);
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ statuses: 2, unknownStatuses: 0 });
      expect((await fake.deliver(base, fake.statusWebhook([{ wamid, status: "delivered", timestamp: 1_750_000_005 }]))).status).toBe(200);

      const row = await gw.gateway.store.getDelivery(delivery.id);
      expect(row?.status).toBe("sent");
      expect(row?.display_metadata).toEqual({ receipt: "read", receipts: { sent: 1_750_000_001, delivered: 1_750_000_005, read: 1_750_000_009 } });
      await waitFor(() => log.events.filter((e) => e.kind === "reply.status").length === 3, 5_000, "three reply.status events");
      expect(log.events.filter((e) => e.kind === "reply.status").map((e) => [e.data.status, e.data.shown_status])).toEqual([
        ["sent", "sent"],
        ["read", "read"],
        ["delivered", "read"],
      ]);
    } finally {
      log.stop();
    }

    // A status of a message the ledger never sent changes nothing and is still acknowledged.
    const stranger = await fake.deliver(base, fake.statusWebhook([{ wamid: "wamid.NOT-OURS", status: "delivered" }]));
    expect(stranger.status).toBe(200);
    expect(await stranger.json()).toMatchObject({ statuses: 0, unknownStatuses: 1 });
  });

  it("shows a failed status with Meta's errors in the display metadata", async () => {
    const message = fake.textMessage("this reply will fail to arrive");
    expect((await fake.deliver(base, fake.messagesWebhook([message]))).status).toBe(200);
    const delivery = await sentReply(message);
    const errors = [{ code: 131026, title: "Message undeliverable", message: "Message undeliverable", error_data: { details: "Message Undeliverable." } }];
    const res = await fake.deliver(base, fake.statusWebhook([{ wamid: delivery.platform_message_id as string, status: "failed", timestamp: 1_750_000_100, errors }]));
    expect(res.status).toBe(200);
    expect((await gw.gateway.store.getDelivery(delivery.id))?.display_metadata).toEqual({
      receipt: "failed",
      receipts: { failed: 1_750_000_100 },
      receipt_errors: errors,
    });
  });

  it("waits out an HTTP 429's Retry-After, then delivers the reply exactly once", async () => {
    const message = fake.textMessage("please answer after the rate limit");
    const callsBefore = fake.calls.length;
    // 2 s, so that honouring Retry-After is told apart from the queue's own ~1 s first backoff.
    fake.rateLimitNext(1, 2);
    expect((await fake.deliver(base, fake.messagesWebhook([message]))).status).toBe(200);

    await sentReply(message, 15_000);
    const sends = fake.calls.slice(callsBefore).filter((c) => c.kind === "send" && c.body?.to === message.from);
    expect(sends.map((c) => c.status)).toEqual([429, 200]);
    const waitedMs = callTime(sends[1]) - callTime(sends[0]);
    expect(waitedMs).toBeGreaterThanOrEqual(1_950);
    expect(waitedMs).toBeLessThan(4_500);
    await settle(500);
    expect(fake.sentTo(message.from).map((m) => m.body)).toEqual(["Echo: please answer after the rate limit"]);
  });

  it("treats Graph's throughput error (code 130429) as a rate limit: waits, then delivers once", async () => {
    const message = fake.textMessage("answer me once the number may send again");
    const callsBefore = fake.calls.length;
    fake.throughputLimitNext(1);
    expect((await fake.deliver(base, fake.messagesWebhook([message]))).status).toBe(200);

    await sentReply(message, 15_000);
    const sends = fake.calls.slice(callsBefore).filter((c) => c.kind === "send" && c.body?.to === message.from);
    expect(sends.map((c) => [c.status, c.errorCode])).toEqual([
      [400, 130429],
      [200, null],
    ]);
    expect(callTime(sends[1]) - callTime(sends[0])).toBeGreaterThanOrEqual(950);
    const row = await inboxRowOf(gw.gateway, "whatsapp", message.wamid);
    const [delivery] = await deliveriesOf(gw.gateway, row.session_id);
    // Not counted as a failed attempt, and not a possible duplicate: nothing was sent the first time.
    expect(delivery).toMatchObject({ status: "sent", possible_duplicate: false });
    await settle(500);
    expect(fake.sentTo(message.from)).toHaveLength(1);
  });

  it("splits a 5,000-character reply into two messages within the 4,096 limit, only the first quoting", async () => {
    const words = Array.from({ length: 1000 }, (_, i) => `w${String(i).padStart(3, "0")}`);
    const long = words.join(" ");
    expect(long.length).toBe(4999);
    model.enqueue({ kind: "text", text: long });
    const message = fake.textMessage("write me something long");
    expect((await fake.deliver(base, fake.messagesWebhook([message]))).status).toBe(200);

    const delivery = await sentReply(message, 15_000);
    const parts = fake.sentTo(message.from);
    expect(parts).toHaveLength(2);
    for (const part of parts) expect(part.body.length).toBeLessThanOrEqual(4096);
    expect(`${parts[0].body} ${parts[1].body}`).toBe(long);
    expect(parts.map((p) => p.contextId)).toEqual([message.wamid, null]);
    expect(delivery.platform_message_id).toBe(parts[0].wamid);
    // Nothing over the limit was ever tried.
    expect(fake.calls.filter((c) => c.errorCode === 131009)).toHaveLength(0);
  });

  it("records a voice note as rejected with its reason, ignores a reaction, and answers an image's caption", async () => {
    const person = freshWaId();
    const voice = fake.fixtureMessage("audio_message.json", person);
    const reaction = fake.fixtureMessage("reaction_message.json", person);
    const image = fake.fixtureMessage("image_message.json", person);
    fake.addMedia(fakeJpeg(1229), "image/jpeg", "1003383421387256");
    const res = await fake.deliver(base, fake.messagesWebhook([voice, reaction, image]));
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ accepted: 1, rejected: 1, ignored: 1 });

    expect(await gw.gateway.store.findInboxRow("whatsapp", voice.wamid)).toMatchObject({
      status: "rejected",
      reason: "WhatsApp audio messages carry no text to answer",
    });
    expect(await gw.gateway.store.findInboxRow("whatsapp", reaction.wamid)).toBeNull();
    await sentReply(image);
    expect(fake.sentTo(person).map((m) => [m.body, m.contextId])).toEqual([["Echo: Can you find this one in blue? [image: image/jpeg, 1.2 KB]", image.wamid]]);
    const row = await inboxRowOf(gw.gateway, "whatsapp", image.wamid);
    const [user] = (await gw.gateway.store.getMessages(row.session_id)).filter((m) => m.role === "user");
    expect(user.display_kind).toBe("whatsapp_image");
    expect(user.platform_message_id).toBe(image.wamid);
    expect(user.display_metadata).toMatchObject({ wamid: image.wamid, from: person, media: { id: "1003383421387256", mime_type: "image/jpeg" } });

    // A redelivery of the voice note stays one rejected row.
    expect(await (await fake.deliver(base, fake.messagesWebhook([voice]))).json()).toMatchObject({ rejected: 1 });
    expect((await gw.gateway.store.inboxCounts()).rejected).toBe(1);
    await settle(300);
    expect(fake.sentTo(person)).toHaveLength(1);
  });

  it("answers /help like the other platforms", async () => {
    const message = fake.textMessage("/help");
    expect((await fake.deliver(base, fake.messagesWebhook([message]))).status).toBe(200);
    await sentReply(message);
    expect(fake.sentTo(message.from).map((m) => m.body)).toEqual([HELP_TEXT]);
  });
});
