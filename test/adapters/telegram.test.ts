import { afterEach, describe, expect, it } from "vitest";
import {
  createTelegramAdapter,
  normaliseTelegramUpdate,
  parseTelegramUpdate,
  TELEGRAM_DUPLICATE_NOTE,
  TelegramPoller,
  telegramConfigFrom,
  telegramReplyParts,
  type TelegramAdapter,
  type TelegramBotIdentity,
  type TelegramDecision,
} from "../../src/adapters/telegram/index.js";
import { createTelegramApi } from "../../src/adapters/telegram/api.js";
import { createTelegramIntake } from "../../src/adapters/telegram/intake.js";
import { TelegramIdentity } from "../../src/adapters/telegram/identity.js";
import { LocalSingletonLocks } from "../../src/bus/singleton-lock.js";
import { PermanentSendError, RateLimitedError, type InboundMessage, type OutboundReply } from "../../src/gateway/types.js";
import { loadConfig } from "../../src/main/config.js";
import { FakeTelegram, NOT_MODIFIED, type FakeUpdate } from "../support/fake-telegram.js";
import { waitFor } from "../support/gateway.js";
import { RecordingIngress } from "./support/recording-ingress.js";
import { silentLogger } from "./support/http.js";

const TOKEN = "7012345678:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw4";
const BOT: TelegramBotIdentity = { id: 7012345678, username: "switchboard_test_bot" };
const NOW = 1_760_000_000_000;

function decide(update: unknown): TelegramDecision {
  const parsed = parseTelegramUpdate(update);
  if (!parsed) throw new Error("update did not parse");
  return normaliseTelegramUpdate(parsed, BOT, NOW);
}

function message(decision: TelegramDecision): InboundMessage {
  if (decision.kind !== "message") throw new Error(`ignored: ${decision.reason}`);
  return decision.message;
}

const user = { id: 42, is_bot: false, first_name: "Ada", username: "ada_l" };
const privateChat = { id: 42, type: "private", first_name: "Ada" };
const group = { id: -1001234567890, type: "supergroup", title: "Team" };

describe("normaliseTelegramUpdate", () => {
  it("answers every private message; the inbox key is the update id, the transcript's id chat + message id", () => {
    const inbound = message(decide({ update_id: 900, message: { message_id: 7, date: 1, chat: privateChat, from: user, text: "hello there" } }));
    expect(inbound).toMatchObject({
      platform: "telegram",
      platformMessageId: "900",
      transcriptMessageId: "42:7",
      sessionKey: "telegram:42",
      chatId: "42",
      threadId: null,
      userId: "42",
      text: "hello there",
      displayKind: "telegram_private",
      receivedAt: NOW,
      replyTarget: { chat_id: 42, reply_to_message_id: 7 },
    });
    expect(inbound.displayMetadata).toMatchObject({ update_id: 900, chat_type: "private", message_id: 7, username: "ada_l" });
  });

  it("in groups answers a mention (cleaned out of the text), by entity or by text when there are no entities", () => {
    const text = "hey @Switchboard_Test_Bot what time is it?";
    const withEntity = decide({
      update_id: 1,
      message: { message_id: 1, date: 1, chat: group, from: user, text, entities: [{ type: "mention", offset: 4, length: 21 }] },
    });
    expect(message(withEntity)).toMatchObject({ text: "hey what time is it?", displayKind: "telegram_mention", sessionKey: `telegram:${group.id}` });
    expect(message(decide({ update_id: 2, message: { message_id: 2, date: 1, chat: group, from: user, text } })).text).toBe("hey what time is it?");
    // A longer handle that starts with the bot's is someone else.
    expect(decide({ update_id: 3, message: { message_id: 3, date: 1, chat: group, from: user, text: "@switchboard_test_bot2 hi" } })).toMatchObject({ kind: "ignore" });
    const textMention = decide({
      update_id: 4,
      message: { message_id: 4, date: 1, chat: group, from: user, text: "Switchboard, hi", entities: [{ type: "text_mention", offset: 0, length: 11, user: { id: BOT.id, is_bot: true } }] },
    });
    expect(message(textMention).text).toBe(", hi");
  });

  it("in groups answers replies to the bot and commands for it; ignores the rest", () => {
    const reply = decide({
      update_id: 5,
      message: { message_id: 9, date: 1, chat: group, from: user, text: "and then?", reply_to_message: { message_id: 8, date: 1, chat: group, from: { id: BOT.id, is_bot: true, first_name: "SB" }, text: "Echo" } },
    });
    expect(message(reply)).toMatchObject({ text: "and then?", displayKind: "telegram_reply" });
    const command = (text: string, length = text.length) =>
      decide({ update_id: 6, message: { message_id: 10, date: 1, chat: group, from: user, text, entities: [{ type: "bot_command", offset: 0, length }] } });
    expect(message(command("/status@switchboard_test_bot"))).toMatchObject({ text: "/status", displayKind: "telegram_command" });
    expect(message(command("/new"))).toMatchObject({ text: "/new" });
    expect(command("/new@other_bot")).toEqual({ kind: "ignore", reason: "command for another bot" });
    expect(decide({ update_id: 7, message: { message_id: 11, date: 1, chat: group, from: user, text: "just chatting" } })).toEqual({
      kind: "ignore",
      reason: "group message not addressed to the bot",
    });
  });

  it("makes a forum topic its own session, and the reply stay in it", () => {
    const forum = { ...group, is_forum: true };
    const inbound = message(
      decide({ update_id: 8, message: { message_id: 30, date: 1, chat: forum, from: user, text: "@switchboard_test_bot hi", message_thread_id: 12, is_topic_message: true } }),
    );
    expect(inbound).toMatchObject({ sessionKey: `telegram:${group.id}:12`, threadId: "12", replyTarget: { chat_id: group.id, message_thread_id: 12, reply_to_message_id: 30 } });
    // A reply thread in a group that is not a forum is not a topic.
    const plain = message(decide({ update_id: 9, message: { message_id: 31, date: 1, chat: group, from: user, text: "@switchboard_test_bot hi", message_thread_id: 12 } }));
    expect(plain.sessionKey).toBe(`telegram:${group.id}`);
  });

  it("takes captions as text, references the files by id for the download, and keeps the file ids", () => {
    const inbound = message(
      decide({
        update_id: 10,
        message: { message_id: 40, date: 1, chat: privateChat, from: user, caption: "what is this?", document: { file_id: "BQAC-doc", file_name: "a.pdf", mime_type: "application/pdf" } },
      }),
    );
    expect(inbound.text).toBe("what is this?");
    expect(inbound.attachments).toEqual([{ id: "BQAC-doc", name: "a.pdf", contentType: "application/pdf" }]);
    expect(inbound.displayMetadata).toMatchObject({ file_ids: ["BQAC-doc"], media: ["document"] });
  });

  it("takes edits, service messages, bots and a bare mention as no turn", () => {
    expect(decide({ update_id: 11, edited_message: { message_id: 1, date: 1, chat: privateChat, text: "x" } })).toEqual({ kind: "ignore", reason: "edited message" });
    expect(decide({ update_id: 12, message: { message_id: 2, date: 1, chat: group, from: user, new_chat_members: [user] } })).toMatchObject({ kind: "ignore" });
    expect(decide({ update_id: 13, message: { message_id: 3, date: 1, chat: privateChat, from: { id: 9, is_bot: true }, text: "beep" } })).toEqual({ kind: "ignore", reason: "from a bot" });
    expect(decide({ update_id: 14, message: { message_id: 4, date: 1, chat: group, from: user, text: "@switchboard_test_bot" } })).toEqual({ kind: "ignore", reason: "nothing but the mention" });
    expect(decide({ update_id: 15, photo: [] })).toEqual({ kind: "ignore", reason: "update type not handled" });
  });

  it("answers /start like /help, and an anonymous admin's mention as the group's", () => {
    const start = decide({ update_id: 16, message: { message_id: 5, date: 1, chat: privateChat, from: user, text: "/start", entities: [{ type: "bot_command", offset: 0, length: 6 }] } });
    expect(message(start).text).toBe("/help");
    const anonymous = decide({
      update_id: 17,
      message: { message_id: 6, date: 1, chat: group, from: { id: 1087968824, is_bot: true, username: "GroupAnonymousBot" }, sender_chat: { id: group.id, type: "supergroup" }, text: "@switchboard_test_bot hi" },
    });
    expect(message(anonymous)).toMatchObject({ text: "hi", userId: String(group.id) });
    const forwarded = decide({
      update_id: 18,
      message: { message_id: 7, date: 1, chat: group, from: { id: 777000, is_bot: false }, sender_chat: { id: -1009, type: "channel" }, is_automatic_forward: true, text: "@switchboard_test_bot news" },
    });
    expect(forwarded).toMatchObject({ kind: "ignore" });
  });

  it("refuses updates whose fields have the wrong types", () => {
    expect(parseTelegramUpdate({})).toBeNull();
    expect(parseTelegramUpdate({ update_id: "1" })).toBeNull();
    expect(parseTelegramUpdate({ update_id: 1, message: { message_id: 1, date: 1, chat: { id: "x", type: "private" } } })).toBeNull();
    expect(parseTelegramUpdate([1])).toBeNull();
  });
});

describe("telegramReplyParts", () => {
  it("splits at 4,096 characters and ends a possible duplicate with the note, inside the limit", () => {
    const text = "word ".repeat(819).trim();
    expect(text.length).toBe(4094);
    expect(telegramReplyParts(text, false)).toEqual([text]);
    const long = "x".repeat(4096) + " tail";
    const parts = telegramReplyParts(long, false);
    expect(parts).toHaveLength(2);
    expect(parts.join("")).toBe(long);
    for (const part of parts) expect(part.length).toBeLessThanOrEqual(4096);
    const marked = telegramReplyParts("y".repeat(4096), true);
    expect(marked).toHaveLength(2);
    for (const part of marked) expect(part.length).toBeLessThanOrEqual(4096);
    expect(marked[1].endsWith(TELEGRAM_DUPLICATE_NOTE)).toBe(true);
    expect(telegramReplyParts("  ", false)).toEqual(["(empty reply)"]);
  });
});

describe("Telegram configuration", () => {
  it("is off without a token, and names the variable that is wrong", () => {
    expect(telegramConfigFrom({})).toBeNull();
    expect(telegramConfigFrom({ TELEGRAM_BOT_TOKEN: TOKEN })).toEqual({ botToken: TOKEN, apiUrl: "https://api.telegram.org", webhookSecret: null, webhookUrl: null });
    expect(() => telegramConfigFrom({ TELEGRAM_BOT_TOKEN: "not-a-token" })).toThrow(/^TELEGRAM_BOT_TOKEN: /);
    expect(() => telegramConfigFrom({ TELEGRAM_WEBHOOK_SECRET: "s3cret-of-sixteen-plus" })).toThrow(/^TELEGRAM_BOT_TOKEN: /);
    expect(() => telegramConfigFrom({ TELEGRAM_BOT_TOKEN: TOKEN, TELEGRAM_WEBHOOK_SECRET: "has spaces" })).toThrow(/^TELEGRAM_WEBHOOK_SECRET: /);
    expect(() => telegramConfigFrom({ TELEGRAM_BOT_TOKEN: TOKEN, TELEGRAM_WEBHOOK_URL: "https://x.example/telegram/webhook" })).toThrow(/^TELEGRAM_WEBHOOK_SECRET: /);
    expect(() => telegramConfigFrom({ TELEGRAM_BOT_TOKEN: TOKEN, TELEGRAM_WEBHOOK_SECRET: "s3cret-of-sixteen-plus", TELEGRAM_WEBHOOK_URL: "http://x.example/hook" })).toThrow(/^TELEGRAM_WEBHOOK_URL: /);
    expect(telegramConfigFrom({ TELEGRAM_BOT_TOKEN: TOKEN, TELEGRAM_API_URL: "http://127.0.0.1:8081/" })?.apiUrl).toBe("http://127.0.0.1:8081");
  });

  it("is read by loadConfig, whose errors name the key", () => {
    expect(loadConfig({}).telegram).toBeNull();
    expect(loadConfig({ TELEGRAM_BOT_TOKEN: TOKEN, TELEGRAM_WEBHOOK_SECRET: "abc_DEF-1-sixteen-plus" }).telegram).toMatchObject({ webhookSecret: "abc_DEF-1-sixteen-plus" });
    expect(() => loadConfig({ TELEGRAM_BOT_TOKEN: "x" })).toThrow(/TELEGRAM_BOT_TOKEN/);
  });
});

describe("Telegram adapter sending (against the fake Bot API)", () => {
  let fake: FakeTelegram;
  let adapter: TelegramAdapter;

  afterEach(async () => {
    await adapter?.stop?.();
    await fake?.close();
  });

  async function start(): Promise<void> {
    fake = await FakeTelegram.start({ token: TOKEN, username: BOT.username });
    adapter = createTelegramAdapter({ botToken: TOKEN, apiUrl: fake.url, webhookSecret: null, webhookUrl: null }, { logger: silentLogger, bodyLimitBytes: 1 << 20 });
  }

  const reply = (target: Record<string, unknown>, text: string, extra: Partial<OutboundReply> = {}): OutboundReply => ({
    deliveryId: 1,
    sessionId: "s",
    target,
    text,
    possibleDuplicate: false,
    ...extra,
  });

  it("marks a possible duplicate with the note in italics", async () => {
    await start();
    const { chat } = fake.privateChat();
    const sent = await adapter.send(reply({ chat_id: chat.id }, "the answer", { possibleDuplicate: true }));
    const [posted] = fake.botMessagesIn(chat.id);
    expect(sent.platformMessageId).toBe(String(posted.messageId));
    expect(posted.text).toBe(`the answer\n\n${TELEGRAM_DUPLICATE_NOTE}`);
    expect(posted.entities).toEqual([{ type: "italic", offset: 12, length: TELEGRAM_DUPLICATE_NOTE.length }]);
  });

  it("edits the streamed message; the same text again is no error; a message gone gets the reply anew", async () => {
    await start();
    const { chat } = fake.privateChat();
    const id = await adapter.postMessage({ chat_id: chat.id }, "partial");
    await adapter.send(reply({ chat_id: chat.id, edit_message_id: id }, "partial and final"));
    await adapter.send(reply({ chat_id: chat.id, edit_message_id: id }, "partial and final", { deliveryId: 2 }));
    expect(fake.callsTo("editMessageText").map((c) => c.description)).toEqual([null, NOT_MODIFIED]);
    expect(fake.botMessagesIn(chat.id).map((m) => m.text)).toEqual(["partial and final"]);
    const anew = await adapter.send(reply({ chat_id: chat.id, edit_message_id: "999" }, "posted instead", { deliveryId: 3 }));
    expect(fake.message(chat.id, Number(anew.platformMessageId))?.text).toBe("posted instead");
  });

  it("turns a 429 into RateLimitedError(retry_after) and holds the chat back meanwhile; bad chats are permanent", async () => {
    await start();
    const { chat } = fake.privateChat();
    fake.rateLimitNext(1, 3);
    const error = await adapter.send(reply({ chat_id: chat.id }, "hi")).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RateLimitedError);
    expect((error as RateLimitedError).retryAfterMs).toBe(3000);
    const callsBefore = fake.calls.length;
    const held = await adapter.send(reply({ chat_id: chat.id }, "hi", { deliveryId: 2 })).catch((e: unknown) => e);
    expect(held).toBeInstanceOf(RateLimitedError);
    expect((held as RateLimitedError).retryAfterMs).toBeGreaterThan(2000);
    expect(fake.calls.length).toBe(callsBefore);
    await expect(adapter.send(reply({ chat_id: 1234 }, "hi"))).rejects.toBeInstanceOf(PermanentSendError);
    await expect(adapter.send(reply({}, "hi"))).rejects.toBeInstanceOf(PermanentSendError);
  });

  it("is refused with 401 by a Bot API that does not know the token", async () => {
    fake = await FakeTelegram.start({ token: TOKEN });
    adapter = createTelegramAdapter({ botToken: "7012345678:wrong", apiUrl: fake.url, webhookSecret: null, webhookUrl: null }, { logger: silentLogger, bodyLimitBytes: 1 << 20 });
    const { chat } = fake.privateChat();
    const error = await adapter.send(reply({ chat_id: chat.id }, "hi")).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PermanentSendError);
    expect(String(error)).toMatch(/401 Unauthorized/);
    expect(String(error)).not.toContain("wrong");
  });
});

describe("TelegramPoller", () => {
  let fake: FakeTelegram;
  const pollers: TelegramPoller[] = [];

  afterEach(async () => {
    await Promise.all(pollers.splice(0).map((p) => p.stop()));
    await fake?.close();
  });

  function poller(ingress: RecordingIngress, locks: LocalSingletonLocks): TelegramPoller {
    const api = createTelegramApi(TOKEN, fake.url);
    const intake = createTelegramIntake(ingress, { identity: new TelegramIdentity(api), logger: silentLogger, now: Date.now });
    const p = new TelegramPoller({ api, lock: locks.lock("telegram-poller"), intake, logger: silentLogger, pollTimeoutSeconds: 5, standbyRetryMs: 50 });
    pollers.push(p);
    return p;
  }

  it("moves the offset past an update only once it is recorded", async () => {
    fake = await FakeTelegram.start({ token: TOKEN, username: BOT.username });
    const ingress = new RecordingIngress();
    ingress.failWith = new Error("database is locked");
    poller(ingress, new LocalSingletonLocks()).start();
    const { chat } = fake.privateChat();
    const updates: FakeUpdate[] = [fake.userMessage(chat, "one"), fake.userMessage(chat, "two")];
    fake.pushUpdates(...updates);
    await waitFor(() => (fake.handedOut.get(updates[0].update_id) ?? 0) >= 2, 10_000, "the unrecorded update handed out again");
    expect(fake.pendingUpdates).toBe(2);
    expect(fake.confirmedBelow).toBeLessThanOrEqual(updates[0].update_id);

    ingress.failWith = null;
    await waitFor(() => fake.confirmedBelow > updates[1].update_id, 10_000, "both confirmed");
    expect(ingress.accepted.map((m) => m.text)).toEqual(["one", "two"]);
    expect(fake.callsTo("getUpdates").every((c) => JSON.stringify(c.params.allowed_updates) === '["message"]')).toBe(true);
  });

  it("polls from one poller at a time; the standby takes over when the first stops", async () => {
    fake = await FakeTelegram.start({ token: TOKEN, username: BOT.username });
    const ingress = new RecordingIngress();
    const locks = new LocalSingletonLocks();
    const first = poller(ingress, locks);
    const second = poller(ingress, locks);
    first.start();
    await waitFor(() => fake.waitingPolls === 1, 5_000, "the first poller waiting");
    second.start();
    const { chat } = fake.privateChat();
    fake.pushUpdates(fake.userMessage(chat, "to whoever polls"));
    await waitFor(() => ingress.accepted.length === 1, 5_000, "recorded");
    await first.stop();
    fake.pushUpdates(fake.userMessage(chat, "after the handover"));
    await waitFor(() => ingress.accepted.length === 2, 5_000, "recorded by the second poller");
    expect({ overlaps: fake.overlaps, conflicts: fake.conflicts }).toEqual({ overlaps: 0, conflicts: 0 });
    expect(ingress.duplicates).toHaveLength(0);
  });
});
