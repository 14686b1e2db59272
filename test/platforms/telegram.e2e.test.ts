// Telegram through a real gateway in webhook mode: updates delivered the way Telegram delivers
// them (with the secret token given to setWebhook), replies through the fake Bot API, with the
// turn and delivery workers, Redis and SQLite all real.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeTelegram, type FakeChat, type FakeTelegramCall, type FakeUpdate } from "../support/fake-telegram.js";
import { startTestGateway, waitFor, type TestGateway } from "../support/gateway.js";
import { TELEGRAM_COMMANDS, TELEGRAM_DUPLICATE_NOTE } from "../../src/adapters/telegram/index.js";
import { inboxTotal, settle, transcript } from "./support/probes.js";
import {
  inboxRowOfUpdate,
  LongReplyProvider,
  longText,
  sentTelegramReply,
  TELEGRAM_BOT_USERNAME,
  TELEGRAM_SECRET,
  TELEGRAM_TOKEN,
  updateMessageId,
} from "./support/telegram.js";

const LOG_LEVEL = process.env.PLATFORMS_LOG ?? "silent";
const WEBHOOK_URL = "https://bot.example.test/telegram/webhook";
/** Slow enough that a reply streams as several edits. */
const CHUNK_DELAY_MS = 250;

let fake: FakeTelegram;
let gw: TestGateway;
let webhook: string;

beforeAll(async () => {
  fake = await FakeTelegram.start({ token: TELEGRAM_TOKEN, username: TELEGRAM_BOT_USERNAME });
  gw = await startTestGateway({
    http: true,
    workers: true,
    provider: new LongReplyProvider(CHUNK_DELAY_MS),
    env: {
      TELEGRAM_BOT_TOKEN: TELEGRAM_TOKEN,
      TELEGRAM_WEBHOOK_SECRET: TELEGRAM_SECRET,
      TELEGRAM_WEBHOOK_URL: WEBHOOK_URL,
      TELEGRAM_API_URL: fake.url,
      LOG_LEVEL,
    },
  });
  webhook = `${gw.gateway.url}/telegram/webhook`;
  // The gateway registered the webhook at start; Telegram delivers with the secret it was given.
  await waitFor(() => fake.webhook !== null, 10_000, "setWebhook");
});

afterAll(async () => {
  await gw?.stop();
  await fake?.close();
});

function callsIn(method: string, chat: FakeChat): FakeTelegramCall[] {
  return fake.callsTo(method).filter((c) => c.params.chat_id === chat.id);
}

async function deliver(update: FakeUpdate): Promise<string> {
  const delivery = await fake.deliverWebhook(update, webhook);
  expect(delivery.status, delivery.body).toBe(200);
  return (JSON.parse(delivery.body) as { status: string }).status;
}

describe("Telegram webhook through the gateway", () => {
  it("registers the commands and the webhook (with the secret and the update types it handles) at start", async () => {
    await waitFor(() => fake.commands.length > 0, 10_000, "setMyCommands");
    expect(fake.commands.map((c) => c.command)).toEqual(["new", "stop", "status", "help"]);
    expect(fake.commands).toEqual(TELEGRAM_COMMANDS);
    expect(fake.webhook).toEqual({ url: WEBHOOK_URL, secretToken: TELEGRAM_SECRET, allowedUpdates: ["message"] });
  });

  it("answers a private message once, as a reply to it, streamed as throttled edits of one message, typing meanwhile", async () => {
    const { chat } = fake.privateChat();
    const question = "please count slowly one two three four five six seven eight nine ten";
    const update = fake.userMessage(chat, question);
    expect(await deliver(update)).toBe("accepted");

    const delivery = await sentTelegramReply(gw.gateway, update);
    const finalText = `Echo: ${question}`;
    const replies = fake.botMessagesIn(chat.id);
    expect(replies).toHaveLength(1);
    const [reply] = replies;
    expect(reply.text).toBe(finalText);
    expect(reply.replyTo).toBe(updateMessageId(update));
    expect(delivery).toMatchObject({ platform: "telegram", platform_message_id: String(reply.messageId), possible_duplicate: false });

    // One sendMessage while the turn was still writing, then edits that only grow.
    const posts = callsIn("sendMessage", chat);
    expect(posts).toHaveLength(1);
    expect(posts[0].params.reply_parameters).toMatchObject({ message_id: updateMessageId(update) });
    const shown = [...reply.history, reply.text];
    expect(shown.length).toBeGreaterThanOrEqual(3);
    expect(shown[0].length).toBeLessThan(finalText.length);
    for (const [i, text] of shown.entries()) {
      expect(finalText.startsWith(text)).toBe(true);
      if (i > 0) expect(text.length).toBeGreaterThan(shown[i - 1].length);
    }
    // About one edit a second, not one per streamed word (12 chunks).
    const edits = callsIn("editMessageText", chat).filter((c) => c.status === 200);
    expect(edits.length).toBe(reply.history.length);
    expect(edits.length).toBeLessThanOrEqual(4);
    const previewTimes = [posts[0], ...edits.slice(0, -1)].map((c) => c.at);
    for (let i = 1; i < previewTimes.length; i++) expect(previewTimes[i] - previewTimes[i - 1]).toBeGreaterThanOrEqual(900);
    // Typing while the turn ran, before the first text.
    const typing = callsIn("sendChatAction", chat);
    expect(typing.length).toBeGreaterThanOrEqual(1);
    expect(typing[0].params.action).toBe("typing");
    expect(typing[0].at).toBeLessThanOrEqual(posts[0].at);

    // The inbox key is the update id; the transcript keeps chat + message id.
    const row = await inboxRowOfUpdate(gw.gateway, update);
    expect(row.platform_message_id).toBe(String(update.update_id));
    const messages = await gw.gateway.store.getMessages(row.session_id);
    const user = messages.find((m) => m.role === "user");
    expect(user).toMatchObject({ content: question, platform_message_id: `${chat.id}:${updateMessageId(update)}`, display_kind: "telegram_private" });
    await settle(300);
    expect(fake.botMessagesIn(chat.id)).toHaveLength(1);
  });

  it("lists Telegram sessions in the sessions API the console reads", async () => {
    const { chat } = fake.privateChat();
    const update = fake.userMessage(chat, "am I listed?");
    await deliver(update);
    const row = await inboxRowOfUpdate(gw.gateway, update);
    const res = await fetch(`${gw.gateway.url}/api/sessions`);
    expect(res.status).toBe(200);
    const { sessions } = (await res.json()) as { sessions: Array<{ id: string; source: string; session_key: string }> };
    expect(sessions.find((s) => s.id === row.session_id)).toMatchObject({ source: "telegram", session_key: `telegram:${chat.id}` });
  });

  it("runs one turn for an update delivered again (same update_id): the redelivery is a duplicate", async () => {
    const { chat } = fake.privateChat();
    const update = fake.userMessage(chat, "how many times will you answer this?");
    expect(await deliver(update)).toBe("accepted");
    const again = await Promise.all([deliver(update), deliver(update)]);
    expect(again).toEqual(["duplicate", "duplicate"]);
    await sentTelegramReply(gw.gateway, update);
    await settle(500);
    const row = await inboxRowOfUpdate(gw.gateway, update);
    expect((await transcript(gw.gateway, row.session_id)).filter((l) => l.startsWith("assistant: "))).toHaveLength(1);
    expect(fake.botMessagesIn(chat.id)).toHaveLength(1);
    expect(callsIn("sendMessage", chat)).toHaveLength(1);
  });

  it("refuses a wrong or missing secret token with 401 JSON and runs no turn", async () => {
    const { chat } = fake.privateChat();
    const update = fake.userMessage(chat, "let me in without the secret");
    const before = await inboxTotal(gw.gateway);
    const attempts: Array<Record<string, string>> = [{}, { "x-telegram-bot-api-secret-token": "not-the-secret" }, { "x-telegram-bot-api-secret-token": `${TELEGRAM_SECRET}x` }];
    for (const headers of attempts) {
      const res = await fetch(webhook, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(update) });
      expect(res.status).toBe(401);
      expect(res.headers.get("content-type")).toMatch(/^application\/json/);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe("invalid_secret_token");
    }
    await settle(300);
    expect(await inboxTotal(gw.gateway)).toBe(before);
    expect(await gw.gateway.store.findInboxRow("telegram", String(update.update_id))).toBeNull();
    expect(fake.botMessagesIn(chat.id)).toHaveLength(0);
  });

  it("takes edited messages and service messages as no turn", async () => {
    const group = fake.group("Edits and joins");
    const { chat } = fake.privateChat();
    const original = fake.userMessage(chat, "first version");
    const before = await inboxTotal(gw.gateway);
    expect(await deliver(fake.editedMessage(original, "second version"))).toBe("ignored");
    expect(await deliver(fake.memberJoined(group, { id: 5_551_234, is_bot: false, first_name: "Grace" }))).toBe("ignored");
    await settle(300);
    expect(await inboxTotal(gw.gateway)).toBe(before);
    expect(fake.botMessagesIn(chat.id)).toHaveLength(0);
    expect(fake.botMessagesIn(group.id)).toHaveLength(0);
  });

  it("in a group answers mentions, replies to its messages and addressed commands; ignores the rest", async () => {
    const group = fake.group("Team chat");
    const before = await inboxTotal(gw.gateway);
    // Not addressed: plain chatter, and a command for another bot.
    expect(await deliver(fake.userMessage(group, "lunch at noon, anyone?"))).toBe("ignored");
    expect(await deliver(fake.userMessage(group, "/help@some_other_bot"))).toBe("ignored");
    expect(await inboxTotal(gw.gateway)).toBe(before);

    const mention = fake.userMessage(group, `@${TELEGRAM_BOT_USERNAME} what is the capital of France?`);
    expect(await deliver(mention)).toBe("accepted");
    await sentTelegramReply(gw.gateway, mention);
    const [answer] = fake.botMessagesIn(group.id);
    expect(answer.text).toBe("Echo: what is the capital of France?");
    expect(answer.replyTo).toBe(updateMessageId(mention));

    const followUp = fake.userMessage(group, "and of Italy?", { replyTo: answer.messageId });
    expect(await deliver(followUp)).toBe("accepted");
    await sentTelegramReply(gw.gateway, followUp);
    expect(fake.botMessagesIn(group.id).map((m) => m.text)).toEqual(["Echo: what is the capital of France?", "Echo: and of Italy?"]);

    for (const command of [`/status@${TELEGRAM_BOT_USERNAME}`, "/help"]) {
      const update = fake.userMessage(group, command);
      expect(await deliver(update)).toBe("accepted");
      await sentTelegramReply(gw.gateway, update);
    }
    const texts = fake.botMessagesIn(group.id).map((m) => m.text);
    expect(texts).toHaveLength(4);
    expect(texts[2]).toMatch(/^Session \S+: idle; 0 message\(s\) queued\.$/);
    expect(texts[3]).toContain("/new");
    // One conversation for the group, and nothing else recorded.
    const row = await inboxRowOfUpdate(gw.gateway, mention);
    expect(await transcript(gw.gateway, row.session_id)).toEqual([
      "user: what is the capital of France?",
      "assistant: Echo: what is the capital of France?",
      "user: and of Italy?",
      "assistant: Echo: and of Italy?",
    ]);
    expect(await inboxTotal(gw.gateway)).toBe(before + 4);
  });

  it("keeps forum topics apart: each topic is its own session and replies stay in it", async () => {
    const forum = fake.group("Forum", { forum: true });
    const design = fake.topic(forum, "Design");
    const ops = fake.topic(forum, "Ops");
    const inDesign = fake.userMessage(forum, `@${TELEGRAM_BOT_USERNAME} colours?`, { topic: design });
    const inOps = fake.userMessage(forum, `@${TELEGRAM_BOT_USERNAME} uptime?`, { topic: ops });
    expect(await deliver(inDesign)).toBe("accepted");
    expect(await deliver(inOps)).toBe("accepted");
    await sentTelegramReply(gw.gateway, inDesign);
    await sentTelegramReply(gw.gateway, inOps);
    expect(fake.botMessagesIn(forum.id, design).map((m) => m.text)).toEqual(["Echo: colours?"]);
    expect(fake.botMessagesIn(forum.id, ops).map((m) => m.text)).toEqual(["Echo: uptime?"]);
    for (const call of callsIn("sendMessage", forum)) expect([design, ops]).toContain(call.params.message_thread_id);
    const [a, b] = await Promise.all([inboxRowOfUpdate(gw.gateway, inDesign), inboxRowOfUpdate(gw.gateway, inOps)]);
    expect(a.session_id).not.toBe(b.session_id);
    const sessions = await Promise.all([gw.gateway.store.getSession(a.session_id), gw.gateway.store.getSession(b.session_id)]);
    expect(sessions.map((s) => s?.session_key)).toEqual([`telegram:${forum.id}:${design}`, `telegram:${forum.id}:${ops}`]);
  });

  it("takes a photo's caption as the text, shows the model the photo, and keeps its file ids in the display metadata", async () => {
    const group = fake.group("Photos");
    const update = fake.userMessage(group, `@${TELEGRAM_BOT_USERNAME} what is in this picture?`, { media: "photo" });
    expect(await deliver(update)).toBe("accepted");
    await sentTelegramReply(gw.gateway, update);
    expect(fake.botMessagesIn(group.id).map((m) => m.text)).toEqual(["Echo: what is in this picture? [image: image/jpeg, 95.8 KB]"]);
    const row = await inboxRowOfUpdate(gw.gateway, update);
    const user = (await gw.gateway.store.getMessages(row.session_id)).find((m) => m.role === "user");
    const photo = (update.message as { photo: Array<{ file_id: string }> }).photo;
    expect(user?.display_kind).toBe("telegram_mention");
    expect(user?.display_metadata).toMatchObject({ file_ids: [photo[photo.length - 1].file_id], media: ["photo"], chat_id: group.id });
  });

  it("waits out a 429's retry_after before anything reaches the chat, then replies exactly once", async () => {
    const { chat } = fake.privateChat();
    const update = fake.userMessage(chat, "short one");
    const callsBefore = fake.calls.length;
    // 2 s, so that honouring retry_after is told apart from the queue's own ~1 s first backoff.
    fake.rateLimitNext(1, 2, ["sendMessage"]);
    expect(await deliver(update)).toBe("accepted");

    await sentTelegramReply(gw.gateway, update, 20_000);
    const sends = fake.calls.slice(callsBefore).filter((c) => c.params.chat_id === chat.id && (c.method === "sendMessage" || c.method === "editMessageText"));
    const [limited, ...later] = sends;
    expect(limited).toMatchObject({ method: "sendMessage", status: 429 });
    expect(later.length).toBeGreaterThan(0);
    for (const call of later) expect(call.at - limited.at).toBeGreaterThanOrEqual(1_950);
    expect(later[0].at - limited.at).toBeLessThan(6_000);
    await settle(500);
    const replies = fake.botMessagesIn(chat.id);
    expect(replies.map((m) => m.text)).toEqual(["Echo: short one"]);
    expect(replies[0].replyTo).toBe(updateMessageId(update));
    expect(sends.filter((c) => c.method === "sendMessage" && c.status === 200)).toHaveLength(1);
  });

  it("splits a 5,000-character reply in two messages of at most 4,096 characters", async () => {
    const { chat } = fake.privateChat();
    const update = fake.userMessage(chat, "write me a long one [[long:5000]]");
    expect(await deliver(update)).toBe("accepted");
    const delivery = await sentTelegramReply(gw.gateway, update, 20_000);
    const expected = longText(5000);
    expect(delivery.text).toBe(expected);
    await settle(500);
    const parts = fake.botMessagesIn(chat.id);
    expect(parts).toHaveLength(2);
    for (const part of parts) expect(part.text.length).toBeLessThanOrEqual(4096);
    expect(parts[0].replyTo).toBe(updateMessageId(update));
    expect(parts.map((p) => p.text).join(" ")).toBe(expected);
    // Telegram never had to refuse a text as too long.
    expect(fake.calls.filter((c) => c.params.chat_id === chat.id && c.status === 400)).toEqual([]);
    expect(parts[0].text).not.toContain(TELEGRAM_DUPLICATE_NOTE);
  });
});
