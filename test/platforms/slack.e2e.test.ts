// Slack through a real gateway: signed Events API requests in, replies out through the fake
// Slack Web API, with the turn and delivery workers, Redis and SQLite all real.
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { FakeSlackCall, FakeSlackMessage } from "../support/fake-slack.js";
import { FakeSlack } from "../support/fake-slack.js";
import { startTestGateway, waitFor, type TestGateway } from "../support/gateway.js";
import type { DeliveryRow } from "../../src/state/types.js";
import { deliveriesOf, inboxRowOf, inboxTotal, recordEvents, settle, stampCalls, transcript } from "./support/probes.js";
import { postSlackEvent, slackMention, slackOwnMessage, slackThreadReply, SLACK_BOT, SLACK_SECRET, SLACK_TOKEN, type SlackMention } from "./support/slack.js";

const LOG_LEVEL = process.env.PLATFORMS_LOG ?? "silent";

async function startSlackGateway(fake: FakeSlack, extraEnv: Record<string, string> = {}): Promise<TestGateway> {
  return startTestGateway({
    http: true,
    workers: true,
    env: {
      SLACK_SIGNING_SECRET: SLACK_SECRET,
      SLACK_BOT_TOKEN: SLACK_TOKEN,
      SLACK_API_URL: fake.url,
      LOG_LEVEL,
      ...extraEnv,
    },
  });
}

/** Waits until the reply to `mention` is recorded as sent; returns its ledger row. */
async function sentReply(gw: TestGateway, mention: SlackMention, timeoutMs = 10_000): Promise<DeliveryRow> {
  const row = await inboxRowOf(gw.gateway, "slack", mention.eventId);
  return waitFor(
    async () => (await deliveriesOf(gw.gateway, row.session_id)).find((d) => d.inbox_id === row.id && d.status === "sent"),
    timeoutMs,
    `sent reply to ${mention.eventId}`,
  );
}

function postMessageCallsIn(fake: FakeSlack, channel: string) {
  return fake.callsTo("chat.postMessage").filter((call) => call.params.channel === channel);
}

function onlyMessage(fake: FakeSlack, channel: string): FakeSlackMessage {
  const messages = fake.messagesIn(channel);
  expect(messages).toHaveLength(1);
  return messages[0];
}

describe("Slack through the gateway", () => {
  let fake: FakeSlack;
  let gw: TestGateway;
  let callTime: (call: FakeSlackCall) => number;

  beforeAll(async () => {
    fake = await FakeSlack.start({ botToken: SLACK_TOKEN, botUserId: SLACK_BOT });
    callTime = stampCalls(fake.calls);
    gw = await startSlackGateway(fake);
  });

  afterAll(async () => {
    await gw?.stop();
    await fake?.close();
  });

  it("answers a signed app_mention in its thread with exactly one message holding the echo, in one Slack call", async () => {
    const claims = vi.spyOn(gw.gateway.store, "claimDelivery");
    const mention = slackMention("what is the capital of France?");
    const res = await postSlackEvent(gw.gateway.url!, mention.body);
    expect(res.status).toBe(200);

    await sentReply(gw, mention);
    const message = onlyMessage(fake, mention.channel);
    expect(message.thread_ts).toBe(mention.ts);
    expect(message.text).toBe(`Echo: ${mention.question}`);
    // Done before a streamed post was due: one chat.postMessage with the final text, no edit.
    await settle(1_500);
    const calls = fake.calls.filter((c) => c.params.channel === mention.channel);
    expect(calls.map((c) => c.method)).toEqual(["chat.postMessage"]);
    expect(calls[0].params.text).toBe(`Echo: ${mention.question}`);
    expect(message.history).toEqual([]);
    // Its stream posted nothing, so the turn's flush inserted the ledger row claimed: no claim's write.
    expect(claims).not.toHaveBeenCalled();
    claims.mockRestore();
  });

  it("refuses a bad signature with 401 and runs no turn", async () => {
    const before = await inboxTotal(gw.gateway);
    const mention = slackMention("this is signed with the wrong secret");
    const res = await postSlackEvent(gw.gateway.url!, mention.body, { secret: "not-the-signing-secret" });
    expect(res.status).toBe(401);
    expect(await inboxTotal(gw.gateway)).toBe(before);
    await settle(300);
    expect(await gw.gateway.store.findInboxRow("slack", mention.eventId)).toBeNull();
    expect(fake.messagesIn(mention.channel)).toHaveLength(0);
  });

  it("refuses a correctly signed request with a stale timestamp with 401", async () => {
    const before = await inboxTotal(gw.gateway);
    const mention = slackMention("a replayed request from long ago");
    const res = await postSlackEvent(gw.gateway.url!, mention.body, { timestamp: Math.floor(Date.now() / 1000) - 400 });
    expect(res.status).toBe(401);
    expect(await inboxTotal(gw.gateway)).toBe(before);
    expect(await gw.gateway.store.findInboxRow("slack", mention.eventId)).toBeNull();
  });

  it("runs one turn and sends one reply for an event Slack delivers again with X-Slack-Retry-Num", async () => {
    const before = await inboxTotal(gw.gateway);
    const mention = slackMention("how many times will you answer this?");
    expect((await postSlackEvent(gw.gateway.url!, mention.body)).status).toBe(200);
    // Slack's retries carry the same event_id, each signed anew; they may overlap.
    const retries = await Promise.all(
      [1, 2, 3].map((n) =>
        postSlackEvent(gw.gateway.url!, mention.body, { headers: { "x-slack-retry-num": String(n), "x-slack-retry-reason": "http_timeout" } }),
      ),
    );
    expect(retries.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(await inboxTotal(gw.gateway)).toBe(before + 1);

    await sentReply(gw, mention);
    await settle(500);
    const row = await inboxRowOf(gw.gateway, "slack", mention.eventId);
    const assistant = (await transcript(gw.gateway, row.session_id)).filter((line) => line.startsWith("assistant: "));
    expect(assistant).toEqual([expect.stringContaining(`Echo: ${mention.question}`)]);
    onlyMessage(fake, mention.channel);
    expect(postMessageCallsIn(fake, mention.channel)).toHaveLength(1);
  });

  it("answers the bot's own message in its thread with 200 and runs no turn, while a person's reply there is answered", async () => {
    const mention = slackMention("start a thread please");
    expect((await postSlackEvent(gw.gateway.url!, mention.body)).status).toBe(200);
    await sentReply(gw, mention);
    const reply = onlyMessage(fake, mention.channel);

    const before = await inboxTotal(gw.gateway);
    const own = slackOwnMessage(mention.channel, mention.ts, reply);
    expect((await postSlackEvent(gw.gateway.url!, own.body)).status).toBe(200);
    await settle(300);
    expect(await inboxTotal(gw.gateway)).toBe(before);
    expect(await gw.gateway.store.findInboxRow("slack", own.eventId)).toBeNull();
    onlyMessage(fake, mention.channel);

    // The same thread does take a person's follow-up: the bot's message was skipped as its own.
    const followUp = slackThreadReply(mention.channel, mention.ts, "and one more thing");
    expect((await postSlackEvent(gw.gateway.url!, followUp.body)).status).toBe(200);
    expect(await inboxTotal(gw.gateway)).toBe(before + 1);
    await waitFor(() => fake.messagesIn(mention.channel).length === 2, 10_000, "answer to the follow-up");
    expect(fake.messagesIn(mention.channel).map((m) => m.thread_ts)).toEqual([mention.ts, mention.ts]);
    // The streamed preview is there; its final edit comes with the delivery: let it land here
    // rather than in the next test's calls.
    await sentReply(gw, { ...mention, eventId: followUp.eventId });
  });

  it("waits out a 429's Retry-After, then delivers the reply exactly once", async () => {
    const mention = slackMention("please answer after the rate limit");
    const callsBefore = fake.calls.length;
    // 2 s, so that honouring Retry-After is told apart from the queue's own ~1 s first backoff.
    // Only this channel's calls: a late edit of the previous test's reply must not take the 429.
    fake.rateLimitNext(1, 2, mention.channel);
    expect((await postSlackEvent(gw.gateway.url!, mention.body)).status).toBe(200);

    await sentReply(gw, mention, 15_000);
    const [limited, ...later] = fake.calls.slice(callsBefore).filter((c) => c.params.channel === mention.channel);
    expect(limited).toMatchObject({ method: "chat.postMessage", status: 429 });
    const firstSent = later.find((c) => c.params.channel === mention.channel && c.error === null);
    expect(firstSent).toBeDefined();
    // Nothing reached the channel before Retry-After had passed, and not much later.
    const waitedMs = callTime(firstSent!) - callTime(limited);
    expect(waitedMs).toBeGreaterThanOrEqual(1_950);
    expect(waitedMs).toBeLessThan(4_500);
    const message = onlyMessage(fake, mention.channel);
    expect(message.text).toContain(`Echo: ${mention.question}`);
    expect(message.thread_ts).toBe(mention.ts);
    await settle(500);
    onlyMessage(fake, mention.channel);
    expect(postMessageCallsIn(fake, mention.channel).filter((c) => c.error === null)).toHaveLength(1);
  });

  describe("deliveries ledger", () => {
    it("records the reply as sent with the Slack message ts and publishes reply.delivered", async () => {
      const mention = slackMention("record this reply in the ledger");
      expect((await postSlackEvent(gw.gateway.url!, mention.body)).status).toBe(200);
      const row = await inboxRowOf(gw.gateway, "slack", mention.eventId);
      const log = await recordEvents(gw.gateway, row.session_id);
      try {
        const delivery = await sentReply(gw, mention);
        const message = onlyMessage(fake, mention.channel);
        expect(delivery).toMatchObject({ platform: "slack", status: "sent", platform_message_id: message.ts, possible_duplicate: false });
        expect(delivery.text).toContain(`Echo: ${mention.question}`);
        const delivered = await waitFor(() => log.events.find((e) => e.kind === "reply.delivered"), 5_000, "reply.delivered");
        expect(delivered.data).toMatchObject({ delivery_id: delivery.id, inbox_id: row.id, platform: "slack", platform_message_id: message.ts });
        expect(log.kinds().indexOf("turn.completed")).toBeGreaterThanOrEqual(0);
        expect(log.kinds().indexOf("turn.completed")).toBeLessThan(log.kinds().indexOf("reply.delivered"));
      } finally {
        log.stop();
      }
    });
  });
});

describe("Slack streaming through the gateway (slow model)", () => {
  const CHUNK_DELAY_MS = 150;
  let fake: FakeSlack;
  let gw: TestGateway;
  let callTime: (call: FakeSlackCall) => number;

  beforeAll(async () => {
    fake = await FakeSlack.start({ botToken: SLACK_TOKEN, botUserId: SLACK_BOT });
    callTime = stampCalls(fake.calls);
    gw = await startSlackGateway(fake, { ECHO_CHUNK_DELAY_MS: String(CHUNK_DELAY_MS) });
  });

  afterAll(async () => {
    await gw?.stop();
    await fake?.close();
  });

  it("streams the reply as one message in the thread plus throttled chat.update edits", async () => {
    const question = "please count slowly one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen";
    expect(question.split(" ")).toHaveLength(21);
    const mention = slackMention(question);
    expect((await postSlackEvent(gw.gateway.url!, mention.body)).status).toBe(200);

    await sentReply(gw, mention, 15_000);
    const finalText = `Echo: ${question}`;
    const message = onlyMessage(fake, mention.channel);
    expect(message.thread_ts).toBe(mention.ts);
    expect(message.text).toBe(finalText);
    // One post while the turn was still writing (a partial text), then edits that only grow.
    const posts = postMessageCallsIn(fake, mention.channel);
    expect(posts).toHaveLength(1);
    expect(posts[0].params.thread_ts).toBe(mention.ts);
    const shown = [...message.history, message.text];
    expect(shown.length).toBeGreaterThanOrEqual(3);
    expect(shown[0].length).toBeLessThan(finalText.length);
    for (const [i, text] of shown.entries()) {
      expect(finalText.startsWith(text)).toBe(true);
      if (i > 0) expect(text.length).toBeGreaterThanOrEqual(shown[i - 1].length);
    }
    // Throttled: about one edit per interval, not one per streamed word (22 chunks).
    const updates = fake.callsTo("chat.update").filter((c) => c.params.channel === mention.channel);
    expect(updates.length).toBe(message.history.length);
    expect(updates.length).toBeLessThanOrEqual(5);
    const previewTimes = [posts[0], ...updates.slice(0, -1)].map(callTime);
    for (let i = 1; i < previewTimes.length; i++) expect(previewTimes[i] - previewTimes[i - 1]).toBeGreaterThanOrEqual(900);
    await settle(300);
    onlyMessage(fake, mention.channel);
  });

  it("sends nothing to the channel before Retry-After when the streamed message's first post is rate limited", async () => {
    const mention = slackMention("short one");
    const callsBefore = fake.calls.length;
    fake.rateLimitNext(1, 1, mention.channel);
    expect((await postSlackEvent(gw.gateway.url!, mention.body)).status).toBe(200);

    await sentReply(gw, mention, 15_000);
    const [limited, ...later] = fake.calls.slice(callsBefore).filter((c) => c.params.channel === mention.channel);
    expect(limited).toMatchObject({ method: "chat.postMessage", status: 429 });
    expect(later.length).toBeGreaterThan(0);
    for (const call of later) expect(callTime(call) - callTime(limited)).toBeGreaterThanOrEqual(950);
    const message = onlyMessage(fake, mention.channel);
    expect(message.text).toBe(`Echo: ${mention.question}`);
    expect(message.thread_ts).toBe(mention.ts);
  });
});
