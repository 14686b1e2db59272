// Slack over Socket Mode through a real gateway: the fake Slack answers apps.connections.open with
// a local ws:// URL and pushes envelopes over it; replies go out through its Web API. Turn and
// delivery workers, Redis and SQLite are all real.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FAKE_APP_TOKEN, FakeSlack, type FakeSocketAck, type FakeSocketConnection } from "../support/fake-slack.js";
import { startTestGateway, waitFor, type TestGateway } from "../support/gateway.js";
import type { DeliveryRow, InboxRow } from "../../src/state/types.js";
import { fixtureText } from "../adapters/support/fixtures.js";
import { deliveriesOf, inboxRowOf, inboxTotal, settle, transcript } from "./support/probes.js";
import { postSlackEvent, slackMention, slackOwnMessage, SLACK_BOT, SLACK_SECRET, SLACK_TOKEN, type SlackMention } from "./support/slack.js";

const LOG_LEVEL = process.env.PLATFORMS_LOG ?? "silent";

async function startSocketGateway(fake: FakeSlack, env: Record<string, string> = {}): Promise<TestGateway> {
  return startTestGateway({
    http: true,
    workers: true,
    env: { SLACK_BOT_TOKEN: SLACK_TOKEN, SLACK_APP_TOKEN: FAKE_APP_TOKEN, SLACK_API_URL: fake.url, LOG_LEVEL, ...env },
  });
}

/** Waits until the gateway holds a Socket Mode connection newer than `after`. */
function connectionAfter(fake: FakeSlack, after: number, timeoutMs = 15_000): Promise<FakeSocketConnection> {
  return waitFor(() => {
    const current = fake.currentSocket;
    return current && current.index > after ? current : null;
  }, timeoutMs, `Socket Mode connection #${after + 1}`);
}

function ackOf(fake: FakeSlack, envelopeId: string, timeoutMs = 5_000): Promise<FakeSocketAck> {
  return waitFor(() => fake.ackOf(envelopeId), timeoutMs, `ack of envelope ${envelopeId}`);
}

async function sentReply(gw: TestGateway, eventId: string, timeoutMs = 10_000): Promise<DeliveryRow> {
  const row = await inboxRowOf(gw.gateway, "slack", eventId);
  return waitFor(
    async () => (await deliveriesOf(gw.gateway, row.session_id)).find((d) => d.inbox_id === row.id && d.status === "sent"),
    timeoutMs,
    `sent reply to ${eventId}`,
  );
}

/** Pushes a mention and waits for its acknowledgement and its reply in the thread. */
async function mentionAnswered(fake: FakeSlack, gw: TestGateway, question: string): Promise<SlackMention> {
  const mention = slackMention(question);
  const envelopeId = fake.sendEventCallback(mention.body);
  await ackOf(fake, envelopeId);
  await sentReply(gw, mention.eventId);
  const messages = fake.messagesIn(mention.channel);
  expect(messages).toHaveLength(1);
  expect(messages[0]).toMatchObject({ thread_ts: mention.ts, text: `Echo: ${question}` });
  return mention;
}

function connectionOpens(fake: FakeSlack) {
  return fake.callsTo("apps.connections.open");
}

describe("Slack over Socket Mode through the gateway", () => {
  let fake: FakeSlack;
  let gw: TestGateway;
  /** For each envelope: was its message in the inbox when the ack arrived? */
  const recordedAtAck = new Map<string, Promise<InboxRow | null>>();
  const eventOfEnvelope = new Map<string, string>();

  beforeAll(async () => {
    fake = await FakeSlack.start({ botToken: SLACK_TOKEN, botUserId: SLACK_BOT });
    fake.onAck((ack) => {
      const eventId = eventOfEnvelope.get(ack.envelopeId);
      // Runs as the ack arrives: the lookup reads the database before anything else happens.
      if (eventId) recordedAtAck.set(ack.envelopeId, gw.gateway.store.findInboxRow("slack", eventId));
    });
    gw = await startSocketGateway(fake);
    await connectionAfter(fake, 0);
  });

  afterAll(async () => {
    await gw?.stop();
    await fake?.close();
  });

  it("opens the connection with the app-level token, and serves no HTTP route without a signing secret", async () => {
    const opens = connectionOpens(fake);
    expect(opens.length).toBeGreaterThanOrEqual(1);
    for (const call of opens) expect(call).toMatchObject({ authorization: `Bearer ${FAKE_APP_TOKEN}`, error: null });
    const res = await postSlackEvent(gw.gateway.url!, slackMention("over HTTP").body);
    expect(res.status).toBe(404);
  });

  it("acknowledges a mention once it is recorded and answers it once, in its thread, with the bot token", async () => {
    // Recording is slowed down, so that an acknowledgement sent before it finished would show.
    const ingress = gw.gateway.ingress;
    const accept = ingress.accept.bind(ingress);
    ingress.accept = async (message) => {
      await settle(300);
      return accept(message);
    };
    const mention = slackMention("what is the capital of France?");
    let envelopeId: string;
    try {
      envelopeId = fake.sendEventCallback(mention.body);
      eventOfEnvelope.set(envelopeId, mention.eventId);
      const ack = await ackOf(fake, envelopeId);
      expect(ack.payload).toEqual({});
    } finally {
      ingress.accept = accept;
    }
    expect(await recordedAtAck.get(envelopeId)).toMatchObject({ platform: "slack", platform_message_id: mention.eventId });

    await sentReply(gw, mention.eventId);
    await settle(300);
    const messages = fake.messagesIn(mention.channel);
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatchObject({ thread_ts: mention.ts, text: `Echo: ${mention.question}` });
    const posts = fake.callsTo("chat.postMessage").filter((c) => c.params.channel === mention.channel);
    expect(posts).toHaveLength(1);
    expect(posts[0].authorization).toBe(`Bearer ${SLACK_TOKEN}`);
  });

  it("acknowledges a redelivery (new envelope, same event_id, retry_attempt 1) and sends no second reply", async () => {
    const mention = await mentionAnswered(fake, gw, "how many times will you answer this?");
    const before = await inboxTotal(gw.gateway);

    const redelivered = fake.sendEventCallback(mention.body, { retryAttempt: 1, retryReason: "timeout" });
    await ackOf(fake, redelivered);
    await settle(500);
    expect(await inboxTotal(gw.gateway)).toBe(before);
    expect(fake.messagesIn(mention.channel)).toHaveLength(1);
    const row = await inboxRowOf(gw.gateway, "slack", mention.eventId);
    const assistant = (await transcript(gw.gateway, row.session_id)).filter((line) => line.startsWith("assistant: "));
    expect(assistant).toEqual([`assistant: Echo: ${mention.question}`]);
  });

  it("leaves an envelope unacknowledged when its message could not be recorded, and answers Slack's redelivery", async () => {
    const ingress = gw.gateway.ingress;
    const accept = ingress.accept.bind(ingress);
    ingress.accept = async () => {
      throw new Error("the database is unavailable");
    };
    const mention = slackMention("will this survive a failed write?");
    let first: string;
    try {
      first = fake.sendEventCallback(mention.body);
      await settle(1_000);
    } finally {
      ingress.accept = accept;
    }
    expect(fake.ackOf(first)).toBeUndefined();
    expect(await gw.gateway.store.findInboxRow("slack", mention.eventId)).toBeNull();

    const redelivered = fake.sendEventCallback(mention.body, { retryAttempt: 1, retryReason: "timeout" });
    await ackOf(fake, redelivered);
    await sentReply(gw, mention.eventId);
    expect(fake.messagesIn(mention.channel)).toHaveLength(1);
  });

  it("acknowledges the bot's own message in its thread and runs no turn for it", async () => {
    const mention = await mentionAnswered(fake, gw, "start a thread please");
    const [reply] = fake.messagesIn(mention.channel);
    const before = await inboxTotal(gw.gateway);

    const own = slackOwnMessage(mention.channel, mention.ts, reply);
    await ackOf(fake, fake.sendEventCallback(own.body));
    await settle(300);
    expect(await inboxTotal(gw.gateway)).toBe(before);
    expect(await gw.gateway.store.findInboxRow("slack", own.eventId)).toBeNull();
    expect(fake.messagesIn(mention.channel)).toHaveLength(1);
  });

  it("acknowledges a slash command with its ephemeral answer and answers the prompt in the channel", async () => {
    const channel = `C0CMD${Date.now().toString(36).toUpperCase()}`;
    const payload = Object.fromEntries(new URLSearchParams(fixtureText("slack", "slash_command.txt")));
    Object.assign(payload, { channel_id: channel, text: "what is the capital of Peru?", trigger_id: `${Date.now()}.738474920.socket` });

    const envelopeId = fake.sendEnvelope("slash_commands", payload);
    const ack = await ackOf(fake, envelopeId);
    expect(ack.payload).toEqual({ response_type: "ephemeral", text: "Received `what is the capital of Peru?`" });
    const reply = await waitFor(() => fake.messagesIn(channel)[0], 10_000, "the command's reply");
    expect(reply).toMatchObject({ text: "Echo: what is the capital of Peru?", thread_ts: null });
  });

  it("acknowledges an envelope type it does not handle", async () => {
    const envelopeId = fake.sendEnvelope("interactive", { type: "block_actions", actions: [] });
    expect((await ackOf(fake, envelopeId)).payload).toEqual({});
  });

  it("opens a new connection after a refresh_requested disconnect and answers the next message", async () => {
    const old = fake.currentSocket!;
    const opensBefore = connectionOpens(fake).length;
    fake.requestSocketRefresh();

    const next = await connectionAfter(fake, old.index);
    await waitFor(() => !old.open, 5_000, "the old connection closed");
    expect(connectionOpens(fake)).toHaveLength(opensBefore + 1);
    const mention = await mentionAnswered(fake, gw, "are you still there after the refresh?");
    expect(fake.acks.find((a) => a.connection === next.index)).toBeDefined();
    expect(fake.messagesIn(mention.channel)).toHaveLength(1);
  });

  it("reconnects after the server closes the socket, or the connection is cut, and answers the next message", async () => {
    for (const how of ["close", "terminate"] as const) {
      const old = fake.currentSocket!;
      const opensBefore = connectionOpens(fake).length;
      fake.dropSocket(how);

      await connectionAfter(fake, old.index);
      expect(connectionOpens(fake)).toHaveLength(opensBefore + 1);
      await mentionAnswered(fake, gw, `still answering after the socket was dropped (${how})?`);
    }
  });

  it("retries when the WebSocket itself is refused, then answers over the connection it gets", async () => {
    const old = fake.currentSocket!;
    const opensBefore = connectionOpens(fake).length;
    const refusedBefore = fake.refusedSockets;
    fake.refuseNextSockets(1);
    fake.dropSocket("close");

    await connectionAfter(fake, old.index);
    expect(fake.refusedSockets).toBeGreaterThan(refusedBefore);
    // One URL for the refused socket, a fresh one for the connection that worked.
    expect(connectionOpens(fake)).toHaveLength(opensBefore + 2);
    await mentionAnswered(fake, gw, "still answering after a refused socket?");
  });
});

describe("Slack over Socket Mode and HTTP at once", () => {
  let fake: FakeSlack;
  let gw: TestGateway;

  beforeAll(async () => {
    fake = await FakeSlack.start({ botToken: SLACK_TOKEN, botUserId: SLACK_BOT });
    gw = await startSocketGateway(fake, { SLACK_SIGNING_SECRET: SLACK_SECRET });
    await connectionAfter(fake, 0);
  });

  afterAll(async () => {
    await gw?.stop();
    await fake?.close();
  });

  it("keeps the signed HTTP route, and an event that came over HTTP is a duplicate over the socket", async () => {
    const mention = slackMention("which way did this arrive?");
    expect((await postSlackEvent(gw.gateway.url!, mention.body)).status).toBe(200);
    await sentReply(gw, mention.eventId);
    const before = await inboxTotal(gw.gateway);

    await ackOf(fake, fake.sendEventCallback(mention.body, { retryAttempt: 1, retryReason: "timeout" }));
    await settle(500);
    expect(await inboxTotal(gw.gateway)).toBe(before);
    expect(fake.messagesIn(mention.channel)).toHaveLength(1);
  });
});

describe("Slack Socket Mode with a refused app-level token", () => {
  let fake: FakeSlack;
  let gw: TestGateway | undefined;

  beforeAll(async () => {
    fake = await FakeSlack.start({ botToken: SLACK_TOKEN, botUserId: SLACK_BOT });
  });

  afterAll(async () => {
    await gw?.stop();
    await fake?.close();
  });

  it("answers apps.connections.open as Slack does: the bot token is the wrong type, another token is invalid", async () => {
    const open = async (token: string) => {
      const res = await fetch(`${fake.url}apps.connections.open`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}` },
        signal: AbortSignal.timeout(5_000),
      });
      return (await res.json()) as { ok: boolean; error?: string; url?: string };
    };
    expect(await open(SLACK_TOKEN)).toEqual({ ok: false, error: "not_allowed_token_type" });
    expect(await open("xapp-1-A0APP000001-0-not-the-token")).toEqual({ ok: false, error: "invalid_auth" });
    expect((await open(FAKE_APP_TOKEN)).url).toMatch(/^ws:\/\/127\.0\.0\.1:\d+\/link\/\?ticket=/);
  });

  it("starts anyway, keeps retrying with growing delays, never connects, and stops promptly", async () => {
    const refused = "xapp-1-A0APP000001-0-revoked";
    gw = await startSocketGateway(fake, { SLACK_APP_TOKEN: refused });
    const opens = await waitFor(() => {
      const calls = connectionOpens(fake).filter((c) => c.authorization === `Bearer ${refused}`);
      return calls.length >= 3 ? calls : null;
    }, 10_000, "three apps.connections.open calls");
    expect(opens.every((c) => c.error === "invalid_auth")).toBe(true);
    expect(fake.socketConnections).toHaveLength(0);

    const stopping = Date.now();
    await gw.stop();
    gw = undefined;
    expect(Date.now() - stopping).toBeLessThan(5_000);
  });
});
