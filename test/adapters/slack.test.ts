import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createSlackAdapter, type SlackAdapter } from "../../src/adapters/slack/index.js";
import { slackSignature } from "../../src/adapters/slack/signature.js";
import { POSSIBLE_DUPLICATE_NOTE } from "../../src/adapters/shared/duplicate-marker.js";
import { InMemoryThreadMemory } from "../../src/bus/thread-memory.js";
import { PermanentSendError, RateLimitedError, type OutboundReply } from "../../src/gateway/types.js";
import { FakeSlack } from "../support/fake-slack.js";
import { fixtureJson, fixtureText } from "./support/fixtures.js";
import { RecordingIngress } from "./support/recording-ingress.js";
import { serveRouters, silentLogger, type RunningApp } from "./support/http.js";

const SECRET = "8f742231b10e8888abcd99yyyzzz85a5";
const TOKEN = "xoxb-17653672481-19874698323-pdFZKVeTuE8sk7oOcBrzbqgy";
const BOT = "U0BOT000001";

interface Harness {
  fake: FakeSlack;
  ingress: RecordingIngress;
  adapter: SlackAdapter;
  app: RunningApp;
}

let h: Harness;

async function start(overrides: { botUserId?: string; token?: string } = {}): Promise<Harness> {
  const fake = await FakeSlack.start({ botToken: TOKEN, botUserId: BOT });
  const ingress = new RecordingIngress();
  const adapter = createSlackAdapter(
    { signingSecret: SECRET, botToken: overrides.token ?? TOKEN, apiUrl: fake.url, botUserId: overrides.botUserId },
    { logger: silentLogger, bodyLimitBytes: 64 * 1024, threads: new InMemoryThreadMemory() },
  );
  const app = await serveRouters(adapter.routes!(ingress));
  return { fake, ingress, adapter, app };
}

async function stop(harness: Harness | undefined): Promise<void> {
  await harness?.app.close();
  await harness?.fake.close();
}

function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

async function postSigned(
  path: string,
  body: string,
  options: { timestamp?: number; secret?: string; headers?: Record<string, string>; contentType?: string } = {},
): Promise<Response> {
  const timestamp = String(options.timestamp ?? nowSeconds());
  return fetch(`${h.app.url}${path}`, {
    method: "POST",
    headers: {
      "content-type": options.contentType ?? "application/json",
      "x-slack-request-timestamp": timestamp,
      "x-slack-signature": slackSignature(options.secret ?? SECRET, timestamp, body),
      ...options.headers,
    },
    body,
  });
}

function reply(target: Record<string, unknown>, text: string, extra: Partial<OutboundReply> = {}): OutboundReply {
  return { deliveryId: 1, sessionId: "sess-1", target, text, possibleDuplicate: false, ...extra };
}

describe("Slack events ingress", () => {
  beforeEach(async () => {
    h = await start();
  });
  afterEach(async () => stop(h));

  it("accepts a correctly signed app_mention as a normalised InboundMessage and answers 200", async () => {
    const res = await postSigned("/slack/events", fixtureText("slack", "app_mention.json"));
    expect(res.status).toBe(200);
    expect(h.ingress.accepted).toHaveLength(1);
    const message = h.ingress.accepted[0];
    expect(message).toMatchObject({
      platform: "slack",
      platformMessageId: "Ev0MENTION0001",
      sessionKey: "slack:T0TEAM00001:C0CHAN00001:1718900000.000100",
      chatId: "C0CHAN00001",
      threadId: "1718900000.000100",
      userId: "U0USER00001",
      text: "what is the capital of France?",
      displayKind: "slack_mention",
      replyTarget: { team: "T0TEAM00001", channel: "C0CHAN00001", thread_ts: "1718900000.000100" },
    });
    expect(message.displayMetadata).toMatchObject({ channel: "C0CHAN00001", user: "U0USER00001", ts: "1718900000.000100" });
    expect(typeof message.receivedAt).toBe("number");
  });

  it("refuses a bad signature with 401 and a JSON error, recording nothing", async () => {
    const res = await postSigned("/slack/events", fixtureText("slack", "app_mention.json"), { secret: "wrong-secret" });
    expect(res.status).toBe(401);
    const body = (await res.json()) as { error: { message: string; type: string; code: string } };
    expect(body.error).toMatchObject({ type: "authentication_error", code: "invalid_signature" });
    expect(body.error.message).toMatch(/signature/i);
    expect(h.ingress.calls).toHaveLength(0);
  });

  it("refuses a body changed after signing", async () => {
    const body = fixtureText("slack", "app_mention.json");
    const timestamp = String(nowSeconds());
    const res = await fetch(`${h.app.url}/slack/events`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-slack-request-timestamp": timestamp,
        "x-slack-signature": slackSignature(SECRET, timestamp, body),
      },
      body: body.replace("capital of France", "capital of Spain"),
    });
    expect(res.status).toBe(401);
    expect(h.ingress.calls).toHaveLength(0);
  });

  it("refuses requests without signature headers", async () => {
    const res = await fetch(`${h.app.url}/slack/events`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: fixtureText("slack", "app_mention.json"),
    });
    expect(res.status).toBe(401);
  });

  it("refuses a correctly signed request whose timestamp is outside ±300 s", async () => {
    const body = fixtureText("slack", "app_mention.json");
    const stale = await postSigned("/slack/events", body, { timestamp: nowSeconds() - 301 });
    expect(stale.status).toBe(401);
    const future = await postSigned("/slack/events", body, { timestamp: nowSeconds() + 400 });
    expect(future.status).toBe(401);
    const edge = await postSigned("/slack/events", body, { timestamp: nowSeconds() - 290 });
    expect(edge.status).toBe(200);
    expect(h.ingress.accepted).toHaveLength(1);
  });

  it("answers url_verification with the challenge", async () => {
    const res = await postSigned("/slack/events", fixtureText("slack", "url_verification.json"));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ challenge: "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" });
  });

  it("recognises X-Slack-Retry-Num redeliveries of one event as duplicates and still answers 200", async () => {
    const body = fixtureText("slack", "app_mention.json");
    const first = await postSigned("/slack/events", body);
    expect(first.status).toBe(200);
    for (const retry of [1, 2, 3]) {
      const res = await postSigned("/slack/events", body, {
        headers: { "x-slack-retry-num": String(retry), "x-slack-retry-reason": "http_timeout" },
      });
      expect(res.status).toBe(200);
    }
    expect(h.ingress.accepted).toHaveLength(1);
    expect(h.ingress.duplicates).toHaveLength(3);
    expect(new Set(h.ingress.calls.map((c) => c.message.platformMessageId))).toEqual(new Set(["Ev0MENTION0001"]));
  });

  it("ignores other bots, its own messages and message_changed (200, nothing recorded)", async () => {
    for (const name of ["bot_message.json", "own_message.json", "message_changed.json"]) {
      const res = await postSigned("/slack/events", fixtureText("slack", name));
      expect(res.status, name).toBe(200);
    }
    expect(h.ingress.calls).toHaveLength(0);
  });

  it("answers direct messages as one session per DM, replying outside threads", async () => {
    const res = await postSigned("/slack/events", fixtureText("slack", "message_im.json"));
    expect(res.status).toBe(200);
    expect(h.ingress.accepted).toHaveLength(1);
    expect(h.ingress.accepted[0]).toMatchObject({
      platformMessageId: "Ev0DIRECT0001",
      sessionKey: "slack:T0TEAM00001:D0DIRECT001",
      threadId: null,
      text: "hello bot, summarise my day",
      displayKind: "slack_dm",
      replyTarget: { team: "T0TEAM00001", channel: "D0DIRECT001" },
    });
    expect(h.ingress.accepted[0].replyTarget).not.toHaveProperty("thread_ts");
  });

  it("answers replies in a thread the bot was mentioned in, and nothing in other threads", async () => {
    // Before the mention the thread is unknown: ignored.
    await postSigned("/slack/events", fixtureText("slack", "message_thread_reply.json"));
    expect(h.ingress.calls).toHaveLength(0);

    await postSigned("/slack/events", fixtureText("slack", "app_mention.json"));
    await postSigned("/slack/events", fixtureText("slack", "message_thread_reply.json"));
    await postSigned("/slack/events", fixtureText("slack", "message_unrelated_thread.json"));
    expect(h.ingress.accepted.map((m) => m.platformMessageId)).toEqual(["Ev0MENTION0001", "Ev0THREAD00001"]);
    const [mention, reply] = h.ingress.accepted;
    expect(reply.sessionKey).toBe(mention.sessionKey);
    expect(reply).toMatchObject({ text: "and what about Germany?", displayKind: "slack_thread_reply" });
  });

  it("answers replies in a thread the bot replied in, and in threads under the bot's own message", async () => {
    await h.adapter.send(reply({ team: "T0TEAM00001", channel: "C0CHAN00001", thread_ts: "1718800000.000900" }, "hi"));
    await postSigned("/slack/events", fixtureText("slack", "message_unrelated_thread.json"));
    expect(h.ingress.accepted.map((m) => m.platformMessageId)).toEqual(["Ev0UNRELATED01"]);

    const underBot = fixtureJson<{ event: Record<string, unknown>; event_id: string }>("slack", "message_thread_reply.json");
    underBot.event_id = "Ev0UNDERBOT001";
    underBot.event.thread_ts = "1718700000.000100";
    underBot.event.parent_user_id = BOT;
    await postSigned("/slack/events", JSON.stringify(underBot));
    expect(h.ingress.accepted.map((m) => m.platformMessageId)).toContain("Ev0UNDERBOT001");
  });

  it("leaves a channel message that mentions the bot to its app_mention event (no double turn)", async () => {
    await postSigned("/slack/events", fixtureText("slack", "message_channel_mention.json"));
    await postSigned("/slack/events", fixtureText("slack", "app_mention.json"));
    expect(h.ingress.accepted.map((m) => m.platformMessageId)).toEqual(["Ev0MENTION0001"]);
  });

  it("maps a signed slash command to the gateway's text command", async () => {
    const res = await postSigned("/slack/commands", fixtureText("slack", "slash_command.txt"), {
      contentType: "application/x-www-form-urlencoded",
    });
    expect(res.status).toBe(200);
    expect(h.ingress.accepted).toHaveLength(1);
    expect(h.ingress.accepted[0]).toMatchObject({
      text: "/stop",
      sessionKey: "slack:T0TEAM00001:C0CHAN00001",
      displayKind: "slack_command",
      userId: "U0USER00001",
    });
    const unsigned = await fetch(`${h.app.url}/slack/commands`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: fixtureText("slack", "slash_command.txt"),
    });
    expect(unsigned.status).toBe(401);
  });

  it("answers 400 for a signed body that is not JSON, and 413 for a body over the limit", async () => {
    const malformed = await postSigned("/slack/events", "{not json");
    expect(malformed.status).toBe(400);
    expect(((await malformed.json()) as { error: { type: string } }).error.type).toBe("invalid_request_error");
    const huge = await postSigned("/slack/events", JSON.stringify({ type: "event_callback", pad: "x".repeat(70_000) }));
    expect(huge.status).toBe(413);
    expect(((await huge.json()) as { error: { code: string } }).error.code).toBe("body_too_large");
  });

  it("answers 503 (so Slack retries) when the message cannot be recorded", async () => {
    h.ingress.failWith = new Error("disk full");
    const res = await postSigned("/slack/events", fixtureText("slack", "app_mention.json"));
    expect(res.status).toBe(503);
  });
});

describe("Slack bot identity", () => {
  afterEach(async () => stop(h));

  it("finds its own user id through auth.test when the payload and config do not give it", async () => {
    h = await start();
    const own = fixtureJson<Record<string, unknown> & { event: Record<string, unknown> }>("slack", "own_message.json");
    delete own.authorizations;
    delete own.event.bot_id;
    delete own.event.bot_profile;
    await postSigned("/slack/events", JSON.stringify(own));
    expect(h.ingress.calls).toHaveLength(0);
    expect(h.fake.callsTo("auth.test")).toHaveLength(1);
    expect(await h.adapter.botUserId()).toBe(BOT);
  });
});

describe("Slack send", () => {
  beforeEach(async () => {
    h = await start();
  });
  afterEach(async () => stop(h));

  const target = { team: "T0TEAM00001", channel: "C0CHAN00001", thread_ts: "1718900000.000100" };

  it("posts the reply in the thread with the bot token as Bearer", async () => {
    const result = await h.adapter.send(reply(target, "Paris."));
    const calls = h.fake.callsTo("chat.postMessage");
    expect(calls).toHaveLength(1);
    expect(calls[0].authorization).toBe(`Bearer ${TOKEN}`);
    expect(calls[0].params).toMatchObject({ channel: "C0CHAN00001", thread_ts: "1718900000.000100", text: "Paris." });
    expect(calls[0].error).toBeNull();
    const posted = h.fake.messagesIn("C0CHAN00001");
    expect(posted).toHaveLength(1);
    expect(result.platformMessageId).toBe(posted[0].ts);
    expect(posted[0].thread_ts).toBe("1718900000.000100");
  });

  it("turns a 429 into RateLimitedError with Slack's Retry-After, without retrying itself", async () => {
    h.fake.rateLimitNext(1, 7);
    const error = await h.adapter.send(reply(target, "Paris.")).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RateLimitedError);
    expect((error as RateLimitedError).retryAfterMs).toBe(7000);
    expect(h.fake.callsTo("chat.postMessage")).toHaveLength(1);
    // The next attempt goes through.
    await h.adapter.send(reply(target, "Paris."));
    expect(h.fake.messagesIn("C0CHAN00001")).toHaveLength(1);
  });

  it("reports a bad token as PermanentSendError", async () => {
    await stop(h);
    h = await start({ token: "xoxb-not-the-right-token" });
    await expect(h.adapter.send(reply(target, "Paris."))).rejects.toBeInstanceOf(PermanentSendError);
    expect(h.fake.calls[0].error).toBe("invalid_auth");
  });

  it("reports an unknown channel as PermanentSendError and a Slack outage as a retryable Error", async () => {
    await expect(h.adapter.send(reply({ channel: "" }, "x"))).rejects.toBeInstanceOf(PermanentSendError);
    h.fake.failNext(1, "internal_error");
    const error = await h.adapter.send(reply(target, "x")).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect(error).not.toBeInstanceOf(PermanentSendError);
    expect(error).not.toBeInstanceOf(RateLimitedError);
  });

  it("edits the streamed message through chat.update when edit_message_id is set", async () => {
    const streamedTs = await h.adapter.postMessage(target, "Par");
    const result = await h.adapter.send(reply({ ...target, edit_message_id: streamedTs }, "Paris is the capital."));
    expect(result.platformMessageId).toBe(streamedTs);
    expect(h.fake.callsTo("chat.postMessage")).toHaveLength(1);
    const updates = h.fake.callsTo("chat.update");
    expect(updates).toHaveLength(1);
    expect(updates[0].params).toMatchObject({ channel: "C0CHAN00001", ts: streamedTs, text: "Paris is the capital." });
    expect(h.fake.messagesIn("C0CHAN00001")[0]).toMatchObject({ text: "Paris is the capital.", history: ["Par"] });
  });

  it("posts anew when the streamed message can no longer be edited", async () => {
    const result = await h.adapter.send(reply({ ...target, edit_message_id: "1718000000.999999" }, "final"));
    expect(h.fake.callsTo("chat.update")[0].error).toBe("message_not_found");
    const posted = h.fake.messagesIn("C0CHAN00001");
    expect(posted.map((m) => m.text)).toEqual(["final"]);
    expect(result.platformMessageId).toBe(posted[0].ts);
  });

  it("marks a possible duplicate visibly and in message metadata", async () => {
    await h.adapter.send(reply(target, "Paris.", { deliveryId: 42, possibleDuplicate: true }));
    const [message] = h.fake.messagesIn("C0CHAN00001");
    expect(message.text.startsWith("Paris.")).toBe(true);
    expect(message.text).toContain(POSSIBLE_DUPLICATE_NOTE);
    expect(message.metadata).toEqual({
      event_type: "switchboard_reply",
      event_payload: { delivery_id: 42, session_id: "sess-1", possible_duplicate: true },
    });
    await h.adapter.send(reply(target, "Berlin.", { deliveryId: 43 }));
    expect(h.fake.messagesIn("C0CHAN00001")[1].text).toBe("Berlin.");
  });
});
