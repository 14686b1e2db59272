import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  classifyWhatsAppMessage,
  createWhatsAppAdapter,
  graphError,
  parseWhatsAppWebhook,
  RATE_LIMIT_WAIT_MS,
  whatsappConfigFrom,
  WhatsAppRateLimitedError,
  WhatsAppSendGate,
  type WhatsAppMessage,
} from "../../src/adapters/whatsapp/index.js";
import { POSSIBLE_DUPLICATE_NOTE } from "../../src/adapters/shared/duplicate-marker.js";
import { RateLimitWindows } from "../../src/bus/rate-limit-windows.js";
import { PermanentSendError, RateLimitedError, type OutboundReply, type PlatformAdapter } from "../../src/gateway/types.js";
import { ConfigError, loadConfig } from "../../src/main/config.js";
import { FakeWhatsApp, freshWaId } from "../support/fake-whatsapp.js";
import { fixtureJson } from "./support/fixtures.js";
import { serveRouters, silentLogger, type RunningApp } from "./support/http.js";
import { RecordingIngress } from "./support/recording-ingress.js";

const ACCESS_TOKEN = "EAAunit-test-token";
const APP_SECRET = "unit-app-secret";
const VERIFY_TOKEN = "unit-verify";
const PHONE_NUMBER_ID = "106540352242922";

const FULL_ENV = {
  WHATSAPP_ACCESS_TOKEN: ACCESS_TOKEN,
  WHATSAPP_APP_SECRET: APP_SECRET,
  WHATSAPP_VERIFY_TOKEN: VERIFY_TOKEN,
  WHATSAPP_PHONE_NUMBER_ID: PHONE_NUMBER_ID,
};

describe("WhatsApp config", () => {
  it("is off without any of the four, on with all four, with the Graph v21.0 default URL", () => {
    expect(whatsappConfigFrom({})).toBeNull();
    expect(whatsappConfigFrom({ WHATSAPP_API_URL: "http://127.0.0.1:1/v21.0" })).toBeNull();
    expect(whatsappConfigFrom(FULL_ENV)).toEqual({
      accessToken: ACCESS_TOKEN,
      appSecret: APP_SECRET,
      verifyToken: VERIFY_TOKEN,
      phoneNumberId: PHONE_NUMBER_ID,
      apiUrl: "https://graph.facebook.com/v21.0",
    });
    expect(whatsappConfigFrom({ ...FULL_ENV, WHATSAPP_API_URL: "http://127.0.0.1:9/v22.0/" })?.apiUrl).toBe("http://127.0.0.1:9/v22.0");
  });

  it("names every missing setting when only some are set", () => {
    expect(() => whatsappConfigFrom({ WHATSAPP_ACCESS_TOKEN: ACCESS_TOKEN })).toThrow(
      /^WHATSAPP_APP_SECRET, WHATSAPP_VERIFY_TOKEN, WHATSAPP_PHONE_NUMBER_ID: required with WHATSAPP_ACCESS_TOKEN/,
    );
    const { WHATSAPP_APP_SECRET: _secret, ...noSecret } = FULL_ENV;
    expect(() => whatsappConfigFrom(noSecret)).toThrow(/^WHATSAPP_APP_SECRET: required/);
  });

  it("refuses a phone number instead of its id, and a bad API URL, without repeating secrets", () => {
    expect(() => whatsappConfigFrom({ ...FULL_ENV, WHATSAPP_PHONE_NUMBER_ID: "+1 555 078 3881" })).toThrow(/^WHATSAPP_PHONE_NUMBER_ID: must be the numeric/);
    expect(() => whatsappConfigFrom({ ...FULL_ENV, WHATSAPP_API_URL: "graph.facebook.com" })).toThrow(/^WHATSAPP_API_URL/);
  });

  it("reads the YAML section, the environment winning", () => {
    const config = whatsappConfigFrom(
      { WHATSAPP_VERIFY_TOKEN: "from-env" },
      { access_token: "file-token", app_secret: "file-secret", verify_token: "file-verify", phone_number_id: "42" },
    );
    expect(config).toMatchObject({ accessToken: "file-token", appSecret: "file-secret", verifyToken: "from-env", phoneNumberId: "42" });
  });

  it("is wired into loadConfig as a ConfigError naming the variable", () => {
    expect(loadConfig(FULL_ENV).whatsapp).toMatchObject({ phoneNumberId: PHONE_NUMBER_ID });
    expect(loadConfig({}).whatsapp).toBeNull();
    expect(() => loadConfig({ WHATSAPP_VERIFY_TOKEN: "v" })).toThrow(ConfigError);
    expect(() => loadConfig({ WHATSAPP_VERIFY_TOKEN: "v" })).toThrow(/WHATSAPP_ACCESS_TOKEN/);
  });
});

describe("WhatsApp messages", () => {
  const ctx = { phoneNumberId: PHONE_NUMBER_ID, displayPhoneNumber: "15550783881", profileName: "Sheena Nelson", now: 1_750_000_000_000 };
  const fixtureMessage = (name: string): WhatsAppMessage => {
    const body = parseWhatsAppWebhook(Buffer.from(JSON.stringify(withMessages([fixtureJson(`whatsapp`, name)]))));
    if (!body.ok) throw new Error(body.message);
    return body.webhook.values[0].messages![0];
  };

  it("a text message is a turn in the person's session, replying to its wamid", () => {
    const decision = classifyWhatsAppMessage(firstMessage("text_message.json"), ctx);
    expect(decision).toMatchObject({
      kind: "accept",
      message: {
        platform: "whatsapp",
        platformMessageId: "wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQURBNDhDRDA2RjQxMDEyQjI3MwA=",
        sessionKey: `whatsapp:${PHONE_NUMBER_ID}:16505551234`,
        userId: "16505551234",
        text: "Does it come in another color?",
        displayKind: "whatsapp_text",
        displayMetadata: { profile_name: "Sheena Nelson", type: "text", timestamp: 1749416383 },
        replyTarget: { phone_number_id: PHONE_NUMBER_ID, to: "16505551234", message_id: "wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQURBNDhDRDA2RjQxMDEyQjI3MwA=" },
      },
    });
  });

  it("captions of images and documents are text; the media is a reference by id, and its id goes to the display metadata", () => {
    expect(classifyWhatsAppMessage(fixtureMessage("image_message.json"), ctx)).toMatchObject({
      kind: "accept",
      message: {
        text: "Can you find this one in blue?",
        attachments: [{ id: "1003383421387256", name: "image", contentType: "image/jpeg" }],
        displayMetadata: { media: { id: "1003383421387256", mime_type: "image/jpeg" } },
      },
    });
    expect(classifyWhatsAppMessage(fixtureMessage("document_message.json"), ctx)).toMatchObject({
      kind: "accept",
      message: {
        text: "Here is the receipt",
        attachments: [{ id: "1165483341958211", name: "receipt-2025-06.pdf", contentType: "application/pdf" }],
        displayMetadata: { media: { id: "1165483341958211", filename: "receipt-2025-06.pdf" } },
      },
    });
    const text = classifyWhatsAppMessage({ from: "1", id: "wamid.t", type: "text", text: { body: "hi" } }, ctx);
    expect(text.kind === "accept" && text.message.attachments).toBe(undefined);
  });

  it("tapped buttons and list rows answer with their titles", () => {
    const button = { from: "1", id: "wamid.b", type: "button", button: { text: "Yes please", payload: "YES" } };
    const list = { from: "1", id: "wamid.l", type: "interactive", interactive: { type: "list_reply", list_reply: { id: "row-2", title: "Blue" } } };
    expect(classifyWhatsAppMessage(button, ctx)).toMatchObject({ kind: "accept", message: { text: "Yes please", displayMetadata: { button_payload: "YES" } } });
    expect(classifyWhatsAppMessage(list, ctx)).toMatchObject({ kind: "accept", message: { text: "Blue", displayMetadata: { interactive: { type: "list_reply", id: "row-2" } } } });
  });

  it("rejects, with a reason, what carries no text: voice notes, uncaptioned media, unsupported types", () => {
    expect(classifyWhatsAppMessage(fixtureMessage("audio_message.json"), ctx)).toMatchObject({
      kind: "reject",
      reason: "WhatsApp audio messages carry no text to answer",
      message: { displayMetadata: { media: { id: "1253614699108741" } } },
    });
    const image = fixtureMessage("image_message.json");
    delete image.image?.caption;
    expect(classifyWhatsAppMessage(image, ctx)).toMatchObject({ kind: "reject", reason: "WhatsApp image without a caption: no text to answer" });
    expect(classifyWhatsAppMessage(fixtureMessage("unsupported_message.json"), ctx)).toMatchObject({
      kind: "reject",
      reason: "WhatsApp reports the message type as unsupported (Message type unknown)",
    });
    expect(classifyWhatsAppMessage({ from: "1", id: "wamid.t", type: "text", text: { body: "  " } }, ctx)).toMatchObject({ kind: "reject" });
  });

  it("ignores reactions and system notices", () => {
    expect(classifyWhatsAppMessage(fixtureMessage("reaction_message.json"), ctx)).toMatchObject({ kind: "ignore" });
    expect(classifyWhatsAppMessage({ from: "1", id: "wamid.s", type: "system" }, ctx)).toMatchObject({ kind: "ignore" });
  });
});

describe("WhatsApp webhook payloads", () => {
  it("keeps only the messages field's changes and names the first bad field", () => {
    const body = fixtureJson<{ entry: Array<{ changes: unknown[] }> }>("whatsapp", "text_message.json");
    body.entry[0].changes.push({ field: "account_update", value: { anything: true } });
    const parsed = parseWhatsAppWebhook(Buffer.from(JSON.stringify(body)));
    expect(parsed).toMatchObject({ ok: true, webhook: { object: "whatsapp_business_account", otherChanges: 1 } });
    expect(parseWhatsAppWebhook(Buffer.from("[]"))).toEqual({ ok: false, message: "body must be a JSON object" });
    expect(parseWhatsAppWebhook(Buffer.from('{"object":"whatsapp_business_account"}'))).toMatchObject({ ok: false, message: expect.stringMatching(/entry/) });
    const noFrom = withMessages([{ id: "wamid.x", type: "text", text: { body: "hi" } }]);
    expect(parseWhatsAppWebhook(Buffer.from(JSON.stringify(noFrom)))).toMatchObject({
      ok: false,
      message: expect.stringMatching(/entry\.0\.changes\.0\.value\.messages\.0\.from/),
    });
  });
});

describe("Graph errors", () => {
  const error = (code: number, extra: Record<string, unknown> = {}) => ({ error: { message: `(#${code}) x`, type: "OAuthException", code, ...extra } });

  it("rate limits wait: Retry-After when given, else by limit, scoped to the number or the pair", () => {
    const http429 = graphError("send", 429, "3", error(130429));
    expect(http429).toBeInstanceOf(RateLimitedError);
    expect(http429).toMatchObject({ retryAfterMs: 3000, scope: "number" });
    expect(graphError("send", 400, null, error(130429))).toMatchObject({ retryAfterMs: RATE_LIMIT_WAIT_MS.throughput, scope: "number" });
    expect(graphError("send", 400, null, error(131056))).toMatchObject({ retryAfterMs: RATE_LIMIT_WAIT_MS.pair, scope: "pair" });
    expect(graphError("send", 400, null, error(80007))).toMatchObject({ retryAfterMs: RATE_LIMIT_WAIT_MS.calls });
    expect(graphError("send", 429, null, null)).toBeInstanceOf(WhatsAppRateLimitedError);
  });

  it("credentials and bad requests are permanent; server trouble and transient errors are retried", () => {
    expect(graphError("send", 401, null, error(190))).toBeInstanceOf(PermanentSendError);
    expect(graphError("send", 400, null, error(190))).toBeInstanceOf(PermanentSendError);
    expect(graphError("send", 403, null, error(200))).toBeInstanceOf(PermanentSendError);
    expect(graphError("send", 400, null, error(131009))).toBeInstanceOf(PermanentSendError);
    expect(graphError("send", 400, null, error(131047))).toBeInstanceOf(PermanentSendError);
    for (const retried of [graphError("send", 500, null, error(131000)), graphError("send", 400, null, error(2, { is_transient: true })), graphError("send", 503, null, null)]) {
      expect(retried).toBeInstanceOf(Error);
      expect(retried).not.toBeInstanceOf(PermanentSendError);
      expect(retried).not.toBeInstanceOf(RateLimitedError);
    }
    expect(graphError("send", 400, null, error(131009, { error_data: { details: "too long" } })).message).toBe("WhatsApp send: HTTP 400 (code 131009) (#131009) x — too long");
  });
});

describe("the send gate", () => {
  it("holds back the pair after a pair limit and everyone after a number limit, in every process sharing the windows", async () => {
    let now = 1_000;
    const windows = new RateLimitWindows(() => now);
    const gate = new WhatsAppSendGate(windows);
    const other = new WhatsAppSendGate(windows);
    const alice = { to: "111", replyTo: null };
    const bob = { to: "222", replyTo: null };
    await expect(gate.track(alice, () => Promise.reject(new WhatsAppRateLimitedError(6000, "pair", "pair")))).rejects.toThrow("pair");
    expect(() => other.check(alice)).toThrow(RateLimitedError);
    expect(() => other.check(bob)).not.toThrow();
    await expect(gate.track(bob, () => Promise.reject(new WhatsAppRateLimitedError(1000, "number", "number")))).rejects.toThrow("number");
    expect(() => other.check({ to: "333", replyTo: null })).toThrow(RateLimitedError);
    now += 1_001;
    expect(() => other.check(bob)).not.toThrow();
    expect(() => other.check(alice)).toThrow(/held back/);
    now += 5_000;
    expect(() => other.check(alice)).not.toThrow();
  });
});

describe("WhatsApp adapter", () => {
  let fake: FakeWhatsApp;
  let adapter: PlatformAdapter;
  let ingress: RecordingIngress;
  let app: RunningApp;

  beforeEach(async () => {
    fake = await FakeWhatsApp.start({ accessToken: ACCESS_TOKEN, appSecret: APP_SECRET, phoneNumberId: PHONE_NUMBER_ID });
    const config = whatsappConfigFrom({ ...FULL_ENV, WHATSAPP_API_URL: fake.url });
    if (!config) throw new Error("config");
    adapter = createWhatsAppAdapter(config, { logger: silentLogger, bodyLimitBytes: 64 * 1024 });
    ingress = new RecordingIngress();
    app = await serveRouters(adapter.routes!(ingress));
  });

  afterEach(async () => {
    await app.close();
    await fake.close();
  });

  const reply = (target: Record<string, unknown>, text: string, extra: Partial<OutboundReply> = {}): OutboundReply => ({
    deliveryId: 11,
    sessionId: "sess-w",
    target,
    text,
    possibleDuplicate: false,
    ...extra,
  });

  it("resumes a split reply after a limit met half way with the first unsent part, never repeating one", async () => {
    const message = fake.textMessage("hi");
    const target = { phone_number_id: PHONE_NUMBER_ID, to: message.from, message_id: message.wamid };
    const text = `${"a".repeat(4000)}\n${"b".repeat(4000)}\n${"c".repeat(100)}`;
    fake.failNext(1, { status: 400, code: 130429, message: "(#130429) Rate limit hit", afterCalls: 1 });
    await expect(adapter.send(reply(target, text))).rejects.toMatchObject({ scope: "number", retryAfterMs: RATE_LIMIT_WAIT_MS.throughput });
    expect(fake.sent.map((m) => m.body[0])).toEqual(["a"]);
    // Inside the window the retry does not even reach Graph.
    const calls = fake.calls.length;
    await expect(adapter.send(reply(target, text))).rejects.toThrow(/held back/);
    expect(fake.calls).toHaveLength(calls);
    await new Promise((r) => setTimeout(r, RATE_LIMIT_WAIT_MS.throughput + 50));
    const sent = await adapter.send(reply(target, text));
    expect(fake.sent.map((m) => [m.body[0], m.body.length, m.contextId])).toEqual([
      ["a", 4000, message.wamid],
      ["b", 4000, null],
      ["c", 100, null],
    ]);
    expect(sent.platformMessageId).toBe(fake.sent[0].wamid);
  });

  it("a pair limit holds back that person only", async () => {
    const alice = fake.textMessage("hi");
    const bob = fake.textMessage("hello");
    fake.failNext(1, { status: 400, code: 131056, message: "(#131056) (Business Account, Consumer Account) pair rate limit hit" });
    await expect(adapter.send(reply({ to: alice.from }, "one"))).rejects.toMatchObject({ scope: "pair", retryAfterMs: RATE_LIMIT_WAIT_MS.pair });
    await expect(adapter.send(reply({ to: alice.from }, "two"))).rejects.toThrow(/held back/);
    await adapter.send(reply({ to: bob.from }, "three"));
    expect(fake.sent.map((m) => [m.to, m.body])).toEqual([[bob.from, "three"]]);
  });

  it("marks a resend that may repeat an earlier reply", async () => {
    const message = fake.textMessage("hi");
    await adapter.send(reply({ to: message.from, message_id: message.wamid }, "the answer", { possibleDuplicate: true }));
    expect(fake.sent[0].body).toBe(`the answer\n\n${POSSIBLE_DUPLICATE_NOTE}`);
  });

  it("turns a wrong token into a permanent error and a reply target without `to` into one too", async () => {
    const config = whatsappConfigFrom({ ...FULL_ENV, WHATSAPP_ACCESS_TOKEN: "EAA-wrong", WHATSAPP_API_URL: fake.url });
    const wrong = createWhatsAppAdapter(config!, { logger: silentLogger, bodyLimitBytes: 1024 });
    const message = fake.textMessage("hi");
    await expect(wrong.send(reply({ to: message.from }, "x"))).rejects.toBeInstanceOf(PermanentSendError);
    expect(fake.calls.at(-1)).toMatchObject({ status: 401, errorCode: 190 });
    await expect(adapter.send(reply({}, "x"))).rejects.toBeInstanceOf(PermanentSendError);
  });

  it("typing() marks the message read", async () => {
    const message = fake.textMessage("hi");
    await adapter.typing!({ to: message.from, message_id: message.wamid });
    expect(fake.readMarks).toEqual([message.wamid]);
  });

  it("records statuses through the ingress and ignores changes for another phone number id", async () => {
    ingress.sentReplyIds.add("wamid.OURS");
    const statuses = JSON.parse(fake.statusWebhook([
      { wamid: "wamid.OURS", status: "delivered", timestamp: 1_750_000_000 },
      { wamid: "wamid.OTHER", status: "read" },
    ])) as { entry: Array<{ changes: Array<{ value: { statuses: Array<Record<string, unknown>> } }> }> };
    statuses.entry[0].changes[0].value.statuses.push(
      { id: "wamid.OURS", status: "deleted", timestamp: "1" },
      { ...fixtureJson("whatsapp", "status_failed.json"), id: "wamid.OURS" },
    );
    const res = await fake.deliver(app.url, JSON.stringify(statuses));
    expect(await res.json()).toEqual({ accepted: 0, duplicates: 0, rejected: 0, ignored: 1, statuses: 2, unknownStatuses: 1 });
    expect(ingress.receipts.map((r) => [r.platformMessageId, r.receipt.status])).toEqual([
      ["wamid.OURS", "delivered"],
      ["wamid.OTHER", "read"],
      ["wamid.OURS", "failed"],
    ]);
    expect(ingress.receipts[2].receipt).toMatchObject({ at: 1750263780, errors: [{ code: 131047, title: "Re-engagement message" }] });

    const elsewhere = fake.textMessage("for the other number", freshWaId());
    const other = await fake.deliver(app.url, fake.messagesWebhook([elsewhere], { phoneNumberId: "999" }));
    expect(await other.json()).toMatchObject({ accepted: 0, ignored: 1 });
    expect(ingress.calls).toHaveLength(0);
  });

  it("answers 503 when a message cannot be recorded, so that Meta delivers it again", async () => {
    ingress.failWith = new Error("database is locked");
    const res = await fake.deliver(app.url, fake.messagesWebhook([fake.textMessage("hi")]));
    expect(res.status).toBe(503);
    ingress.failWith = null;
    const again = await fake.deliver(app.url, fake.messagesWebhook([fake.textMessage("hi again")]));
    expect(again.status).toBe(200);
  });

  it("answers a signed body about another object with 200 and records nothing", async () => {
    const res = await fake.deliver(app.url, JSON.stringify({ object: "page", entry: [] }));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ignored: true });
  });
});

function withMessages(messages: unknown[]): Record<string, unknown> {
  const body = fixtureJson<{ entry: Array<{ changes: Array<{ value: Record<string, unknown> }> }> }>("whatsapp", "text_message.json");
  body.entry[0].changes[0].value.messages = messages;
  return body;
}

function firstMessage(fixture: string): WhatsAppMessage {
  const parsed = parseWhatsAppWebhook(Buffer.from(JSON.stringify(fixtureJson("whatsapp", fixture))));
  if (!parsed.ok) throw new Error(parsed.message);
  return parsed.webhook.values[0].messages![0];
}
