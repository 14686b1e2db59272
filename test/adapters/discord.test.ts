import { generateKeyPairSync, sign, type KeyObject } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  createDiscordAdapter,
  createDiscordMessageHandler,
  createDiscordStreamingReply,
  normaliseDiscordMessage,
  type DiscordAdapter,
  type DiscordMessageLike,
} from "../../src/adapters/discord/index.js";
import { POSSIBLE_DUPLICATE_NOTE } from "../../src/adapters/shared/duplicate-marker.js";
import { InMemoryThreadMemory } from "../../src/bus/thread-memory.js";
import { PermanentSendError, RateLimitedError, type OutboundReply } from "../../src/gateway/types.js";
import { FakeDiscord } from "../support/fake-discord.js";
import { fixtureJson, fixtureText } from "./support/fixtures.js";
import { RecordingIngress } from "./support/recording-ingress.js";
import { serveRouters, silentLogger, type RunningApp } from "./support/http.js";

const BOT_TOKEN = "MTEwMDAwMDAwMDAwMDAwMDAwMQ.GhIjKl.fake-token-for-tests-only";
const BOT_USER = "1100000000000000001";
const APP_ID = "1200000000000000001";

function keyPair(): { privateKey: KeyObject; publicKeyHex: string } {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");
  const jwk = publicKey.export({ format: "jwk" });
  return { privateKey, publicKeyHex: Buffer.from(jwk.x as string, "base64url").toString("hex") };
}

function signInteraction(privateKey: KeyObject, body: string, timestamp = String(Math.floor(Date.now() / 1000))) {
  const signature = sign(null, Buffer.from(timestamp + body), privateKey).toString("hex");
  return { "x-signature-ed25519": signature, "x-signature-timestamp": timestamp };
}

function reply(target: Record<string, unknown>, text: string, extra: Partial<OutboundReply> = {}): OutboundReply {
  return { deliveryId: 7, sessionId: "sess-d", target, text, possibleDuplicate: false, ...extra };
}

interface Harness {
  fake: FakeDiscord;
  ingress: RecordingIngress;
  adapter: DiscordAdapter;
  app: RunningApp;
  privateKey: KeyObject;
}

let h: Harness;

async function start(options: { botToken?: string | null } = {}): Promise<Harness> {
  const fake = await FakeDiscord.start({ botToken: BOT_TOKEN, botUserId: BOT_USER, applicationId: APP_ID });
  const { privateKey, publicKeyHex } = keyPair();
  const ingress = new RecordingIngress();
  const adapter = createDiscordAdapter(
    {
      publicKey: publicKeyHex,
      botToken: options.botToken === null ? undefined : (options.botToken ?? BOT_TOKEN),
      applicationId: APP_ID,
      apiUrl: fake.url,
    },
    { logger: silentLogger, bodyLimitBytes: 64 * 1024 },
  );
  // Routes only: start() would log in to the real Discord gateway.
  const app = await serveRouters(adapter.routes!(ingress));
  return { fake, ingress, adapter, app, privateKey };
}

async function stop(harness: Harness | undefined): Promise<void> {
  await harness?.app.close();
  await harness?.fake.close();
}

async function postInteraction(body: string, headers: Record<string, string>): Promise<Response> {
  return fetch(`${h.app.url}/discord/interactions`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body,
  });
}

describe("Discord interactions", () => {
  beforeEach(async () => {
    h = await start();
  });
  afterEach(async () => stop(h));

  it("answers a signed PING with PONG", async () => {
    const body = fixtureText("discord", "interaction_ping.json");
    const res = await postInteraction(body, signInteraction(h.privateKey, body));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ type: 1 });
  });

  it("refuses a tampered body, a foreign key's signature and missing headers with 401", async () => {
    const body = fixtureText("discord", "interaction_ask_guild.json");
    const headers = signInteraction(h.privateKey, body);
    const tampered = await postInteraction(body.replace("tallest mountain", "deepest ocean"), headers);
    expect(tampered.status).toBe(401);
    expect(((await tampered.json()) as { error: { code: string } }).error.code).toBe("invalid_signature");

    const other = keyPair();
    expect((await postInteraction(body, signInteraction(other.privateKey, body))).status).toBe(401);

    const otherTimestamp = { ...headers, "x-signature-timestamp": String(Number(headers["x-signature-timestamp"]) + 1) };
    expect((await postInteraction(body, otherTimestamp)).status).toBe(401);
    expect((await postInteraction(body, {})).status).toBe(401);
    expect(h.ingress.calls).toHaveLength(0);
  });

  it("records /ask and answers with a deferred response", async () => {
    const body = fixtureText("discord", "interaction_ask_guild.json");
    const res = await postInteraction(body, signInteraction(h.privateKey, body));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ type: 5 });
    expect(h.ingress.accepted).toHaveLength(1);
    expect(h.ingress.accepted[0]).toMatchObject({
      platform: "discord",
      platformMessageId: "1251000000000000001",
      sessionKey: "discord:1300000000000000001:1310000000000000001",
      chatId: "1310000000000000001",
      threadId: null,
      userId: "1400000000000000001",
      text: "what is the tallest mountain?",
      displayKind: "discord_command",
      displayMetadata: { username: "ada", global_name: "Ada Lovelace", channel_name: "general" },
      replyTarget: {
        kind: "interaction",
        application_id: APP_ID,
        interaction_token: "aW50ZXJhY3Rpb246MTI1MTAwMDAwMDAwMDAwMDAwMTpndWlsZA",
        channel_id: "1310000000000000001",
      },
    });
  });

  it("keys a DM command by dm and channel", async () => {
    const body = fixtureText("discord", "interaction_ask_dm.json");
    const res = await postInteraction(body, signInteraction(h.privateKey, body));
    expect(await res.json()).toEqual({ type: 5 });
    expect(h.ingress.accepted[0]).toMatchObject({
      sessionKey: "discord:dm:1320000000000000001",
      userId: "1400000000000000002",
      text: "remind me what a compiler does",
    });
  });

  it("maps /stop to the gateway command and answers unknown commands ephemerally", async () => {
    const stopCommand = fixtureJson<{ id: string; data: Record<string, unknown> }>("discord", "interaction_ask_guild.json");
    stopCommand.id = "1251000000000000002";
    stopCommand.data = { id: "1220000000000000002", name: "stop", type: 1 };
    const stopBody = JSON.stringify(stopCommand);
    expect(await (await postInteraction(stopBody, signInteraction(h.privateKey, stopBody))).json()).toEqual({ type: 5 });
    expect(h.ingress.accepted.at(-1)?.text).toBe("/stop");

    stopCommand.id = "1251000000000000003";
    stopCommand.data = { id: "1220000000000000003", name: "dance", type: 1 };
    const unknownBody = JSON.stringify(stopCommand);
    const res = await postInteraction(unknownBody, signInteraction(h.privateKey, unknownBody));
    expect(await res.json()).toMatchObject({ type: 4, data: { flags: 64 } });
    expect(h.ingress.accepted).toHaveLength(1);
  });
});

describe("Discord send", () => {
  beforeEach(async () => {
    h = await start();
  });
  afterEach(async () => stop(h));

  const channelTarget = { kind: "channel", channel_id: "1310000000000000001", reply_to: "1253000000000000001" };

  it("sends an interaction reply as a follow-up on the interaction's webhook", async () => {
    const target = { kind: "interaction", application_id: APP_ID, interaction_token: "tok-1", channel_id: "1310000000000000001" };
    const result = await h.adapter.send(reply(target, "Mount Everest."));
    const [call] = h.fake.calls;
    expect(call).toMatchObject({ method: "POST", path: `/webhooks/${APP_ID}/tok-1`, status: 200 });
    expect(call.body).toMatchObject({ content: "Mount Everest." });
    expect(result.platformMessageId).toBe([...h.fake.messages.keys()][0]);
  });

  it("posts to the channel when the interaction token has expired", async () => {
    h.fake.expireInteractionToken("tok-old");
    const target = { kind: "interaction", application_id: APP_ID, interaction_token: "tok-old", channel_id: "1310000000000000001" };
    await h.adapter.send(reply(target, "late answer"));
    expect(h.fake.messagesIn("1310000000000000001").map((m) => m.content)).toEqual(["late answer"]);
  });

  it("replies in the channel with a message reference and the bot token", async () => {
    await h.adapter.send(reply(channelTarget, "Monads wrap values."));
    const [call] = h.fake.calls;
    expect(call).toMatchObject({ method: "POST", path: "/channels/1310000000000000001/messages", status: 200 });
    expect(call.authorization).toBe(`Bot ${BOT_TOKEN}`);
    expect(call.body).toMatchObject({
      content: "Monads wrap values.",
      message_reference: { message_id: "1253000000000000001" },
      allowed_mentions: { parse: [] },
    });
  });

  it("splits replies over 2000 characters into several messages on line boundaries", async () => {
    const lines = Array.from({ length: 120 }, (_, i) => `Line ${i}: ${"lorem ipsum ".repeat(3).trim()}`);
    const text = lines.join("\n");
    expect(text.length).toBeGreaterThan(4000);
    await h.adapter.send(reply(channelTarget, text));
    const sent = h.fake.messagesIn("1310000000000000001");
    expect(sent.length).toBeGreaterThanOrEqual(3);
    expect(h.fake.calls.every((c) => c.status === 200)).toBe(true);
    for (const message of sent) {
      expect(message.content.length).toBeLessThanOrEqual(2000);
      expect(lines).toContain(message.content.split("\n").at(-1));
    }
    expect(sent.map((m) => m.content).join("\n")).toBe(text);
    expect(sent[0].message_reference).toEqual({ message_id: "1253000000000000001" });
    expect(sent.slice(1).every((m) => m.message_reference === null)).toBe(true);
  });

  it("turns a 429 into RateLimitedError from retry_after", async () => {
    h.fake.rateLimitNext(1, 2.5);
    const error = await h.adapter.send(reply(channelTarget, "hi")).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RateLimitedError);
    expect((error as RateLimitedError).retryAfterMs).toBe(2500);
    expect(h.fake.calls.map((c) => c.status)).toEqual([429]);
  });

  it("resumes a split reply after a 429 without posting its earlier parts again", async () => {
    const text = ["0", "1", "2"].map((digit) => digit.repeat(1500)).join("\n");
    h.fake.rateLimitNext(1, 0.2, { afterRequests: 1 });
    const error = await h.adapter.send(reply(channelTarget, text, { deliveryId: 100 })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RateLimitedError);
    expect(h.fake.messagesIn("1310000000000000001").map((m) => m.content[0])).toEqual(["0"]);
    await h.adapter.send(reply(channelTarget, text, { deliveryId: 100 }));
    expect(h.fake.messagesIn("1310000000000000001").map((m) => m.content[0])).toEqual(["0", "1", "2"]);
    expect(h.fake.calls.map((c) => c.status)).toEqual([200, 429, 200, 200]);
  });

  it("reports a bad bot token as PermanentSendError", async () => {
    await stop(h);
    h = await start({ botToken: "not-the-token" });
    const error = await h.adapter.send(reply(channelTarget, "hi")).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PermanentSendError);
    expect(h.fake.calls[0].status).toBe(401);
  });

  it("edits the streamed message when edit_message_id is set, continuing past 2000 characters in new messages", async () => {
    const streamed = await h.adapter.postMessage(channelTarget, "Monads…");
    await h.adapter.send(reply({ ...channelTarget, edit_message_id: streamed }, "Monads wrap values."));
    expect(h.fake.calls.at(-1)).toMatchObject({ method: "PATCH", path: `/channels/1310000000000000001/messages/${streamed}` });
    expect(h.fake.messages.get(streamed)?.content).toBe("Monads wrap values.");

    const long = `${"a".repeat(1500)}\n${"b".repeat(1500)}`;
    await h.adapter.send(reply({ ...channelTarget, edit_message_id: streamed }, long, { deliveryId: 8 }));
    expect(h.fake.messages.get(streamed)?.content).toBe("a".repeat(1500));
    expect(h.fake.messagesIn("1310000000000000001").map((m) => m.content)).toEqual(["a".repeat(1500), "b".repeat(1500)]);
  });

  it("marks a possible duplicate with a visible note", async () => {
    await h.adapter.send(reply(channelTarget, "again", { possibleDuplicate: true }));
    expect(h.fake.messagesIn("1310000000000000001")[0].content).toBe(`again\n\n${POSSIBLE_DUPLICATE_NOTE}`);
  });

  it("shows typing in the channel", async () => {
    await h.adapter.typing!(channelTarget);
    expect(h.fake.typing).toEqual(["1310000000000000001"]);
  });

  it("streams into one message with throttled edits and a final split", async () => {
    const editor = createDiscordStreamingReply(h.adapter, channelTarget, { intervalMs: 50, firstPostDelayMs: 50 });
    for (let i = 0; i < 30; i++) {
      editor.push("x".repeat(100));
      await new Promise((r) => setTimeout(r, 5));
    }
    await editor.finish();
    const sent = h.fake.messagesIn("1310000000000000001");
    expect(sent).toHaveLength(2);
    expect(sent.every((m) => m.content.length <= 2000)).toBe(true);
    expect(sent.map((m) => m.content).join("")).toBe("x".repeat(3000));
    expect(h.fake.calls.filter((c) => c.method === "POST")).toHaveLength(2);
    expect(h.fake.calls.every((c) => c.status === 200)).toBe(true);
  });
});

describe("Discord gateway messages", () => {
  const threads = () => new InMemoryThreadMemory();

  it("normalises a guild mention, with the mention removed", () => {
    const out = normaliseDiscordMessage(fixtureJson<DiscordMessageLike>("discord", "message_guild_mention.json"), BOT_USER, {
      threads: threads(),
      now: 1_718_900_000_500,
    });
    expect(out?.message).toEqual({
      platform: "discord",
      platformMessageId: "1253000000000000001",
      sessionKey: "discord:1300000000000000001:1310000000000000001",
      chatId: "1310000000000000001",
      threadId: null,
      userId: "1400000000000000001",
      workspaceId: "1300000000000000001",
      text: "can you explain monads simply?",
      attachments: undefined,
      displayKind: "discord_mention",
      displayMetadata: {
        guild_id: "1300000000000000001",
        channel_id: "1310000000000000001",
        channel_name: "general",
        thread_id: null,
        user_id: "1400000000000000001",
        username: "ada",
        global_name: "Ada Lovelace",
        created_at: 1718900000123,
      },
      receivedAt: 1_718_900_000_500,
      replyTarget: {
        kind: "channel",
        channel_id: "1310000000000000001",
        reply_to: "1253000000000000001",
        guild_id: "1300000000000000001",
      },
    });
  });

  it("answers every DM, threads the bot owns, and ignores bots, itself and unaddressed guild chatter", () => {
    const dm = normaliseDiscordMessage(fixtureJson<DiscordMessageLike>("discord", "message_dm.json"), BOT_USER);
    expect(dm?.message).toMatchObject({
      sessionKey: "discord:dm:1320000000000000001",
      displayKind: "discord_dm",
      attachments: [{ name: "agenda.pdf", contentType: "application/pdf" }],
    });

    const thread = normaliseDiscordMessage(fixtureJson<DiscordMessageLike>("discord", "message_thread_reply.json"), BOT_USER);
    expect(thread?.message).toMatchObject({
      sessionKey: "discord:1300000000000000001:1310000000000000001:1330000000000000001",
      threadId: "1330000000000000001",
      chatId: "1330000000000000001",
      displayKind: "discord_thread_reply",
      replyTarget: { kind: "channel", channel_id: "1330000000000000001", thread_id: "1330000000000000001" },
    });

    expect(normaliseDiscordMessage(fixtureJson<DiscordMessageLike>("discord", "message_bot.json"), BOT_USER)).toBeNull();
    expect(normaliseDiscordMessage(fixtureJson<DiscordMessageLike>("discord", "message_guild_plain.json"), BOT_USER)).toBeNull();
    const self = fixtureJson<DiscordMessageLike>("discord", "message_dm.json");
    self.author = { ...self.author, id: BOT_USER, bot: false };
    expect(normaliseDiscordMessage(self, BOT_USER)).toBeNull();
  });

  it("answers a thread it is not the owner of only after being mentioned there", async () => {
    const memory = threads();
    const ingress = new RecordingIngress();
    const handle = createDiscordMessageHandler({ ingress, threads: memory, logger: silentLogger, botUserId: () => BOT_USER });
    const reply = fixtureJson<DiscordMessageLike>("discord", "message_thread_reply.json");
    reply.channel.ownerId = "1400000000000000009";
    expect(await handle(reply)).toBe("ignored");

    const mention = { ...reply, id: "1255000000000000002", content: `<@${BOT_USER}> help here`, mentions: { users: [{ id: BOT_USER }] } };
    expect(await handle(mention)).toBe("accepted");
    expect(await handle({ ...reply, id: "1255000000000000003" })).toBe("accepted");
    expect(await handle({ ...reply, id: "1255000000000000003" })).toBe("duplicate");
    expect(ingress.accepted.map((m) => m.text)).toEqual(["help here", "thanks! and functors?"]);
  });
});
