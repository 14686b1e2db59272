// The access policy through running gateways. Telegram in pairing mode on two nodes (one store, one
// Redis): a stranger's message is recorded as rejected, calls no model and gets a one-time code,
// shown once; approved by the CLI (and another stranger by the API), the next message is answered,
// by the other node. Slack in allowlist mode: a channel on the list is answered, another channel
// and a denied user are not; the API is governed by its key, not by the policy. Other bots on
// Slack: ignored unless allowed, and then answered at most max_bot_exchanges times in a row.
import { spawnSync } from "node:child_process";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EchoProvider } from "../../src/agent/providers/echo.js";
import type { CompletionRequest, CompletionResult, ModelProvider } from "../../src/agent/types.js";
import { askApi } from "../faults/http.js";
import { FakeSlack } from "../support/fake-slack.js";
import { FakeTelegram, type FakeChat, type FakeUpdate } from "../support/fake-telegram.js";
import { startTestGateway, waitFor, type TestGateway } from "../support/gateway.js";
import { deliveriesOf, inboxRowOf } from "./support/probes.js";
import { writeFileSync } from "node:fs";
import { postSlackEvent, slackMention, slackThreadReply, SLACK_BOT, SLACK_SECRET, SLACK_TOKEN } from "./support/slack.js";
import { makeTempDir } from "../support/tmp.js";
import { inboxRowOfUpdate, sentTelegramReply, TELEGRAM_BOT_USERNAME, TELEGRAM_SECRET, TELEGRAM_TOKEN } from "./support/telegram.js";

const LOG_LEVEL = process.env.PLATFORMS_LOG ?? "silent";
const CLI = resolve(join(import.meta.dirname, "..", "..", "src", "main", "cli.ts"));
const CODE = /[A-HJ-NP-Z2-9]{4}-[A-HJ-NP-Z2-9]{4}/;

/** The echo model, counting its calls. */
class CountingModel implements ModelProvider {
  readonly name = "echo";
  readonly model = "echo";
  calls = 0;
  private readonly echo = new EchoProvider();
  complete(request: CompletionRequest): Promise<CompletionResult> {
    this.calls++;
    return this.echo.complete(request);
  }
}

describe("pairing on Telegram, two nodes", () => {
  let fake: FakeTelegram;
  let node1: TestGateway;
  let node2: TestGateway;
  const models = [new CountingModel(), new CountingModel()];
  const modelCalls = (): number => models[0]!.calls + models[1]!.calls;

  beforeAll(async () => {
    fake = await FakeTelegram.start({ token: TELEGRAM_TOKEN, username: TELEGRAM_BOT_USERNAME });
    const env = { TELEGRAM_BOT_TOKEN: TELEGRAM_TOKEN, TELEGRAM_WEBHOOK_SECRET: TELEGRAM_SECRET, TELEGRAM_WEBHOOK_URL: "https://bot.example.test/telegram/webhook", TELEGRAM_API_URL: fake.url, ACCESS_MODE: "pairing", LOG_LEVEL };
    node1 = await startTestGateway({ provider: models[0], env });
    node2 = await startTestGateway({ provider: models[1], env: node1.env });
    await waitFor(() => fake.webhook !== null, 10_000, "setWebhook");
  }, 60_000);

  afterAll(async () => {
    await node2?.stop();
    await node1?.stop();
    await fake?.close();
  });

  async function deliver(node: TestGateway, update: FakeUpdate): Promise<string> {
    const delivery = await fake.deliverWebhook(update, `${node.gateway.url}/telegram/webhook`);
    expect(delivery.status, delivery.body).toBe(200);
    return (JSON.parse(delivery.body) as { status: string }).status;
  }

  /** A stranger writes; returns the code the bot sent back (the only message in the chat). */
  async function strangerCode(chat: FakeChat): Promise<string> {
    const update = fake.userMessage(chat, "hello, who are you?");
    expect(await deliver(node1, update)).toBe("rejected");
    const row = await inboxRowOfUpdate(node1.gateway, update);
    expect(row).toMatchObject({ status: "rejected", reason: "pairing_required" });
    const notice = await waitFor(() => fake.botMessagesIn(chat.id)[0], 10_000, "the pairing notice");
    return CODE.exec(notice.text)?.[0] ?? "";
  }

  it("shows a stranger a code once, calls no model, and answers on the other node once approved by the CLI", async () => {
    const { chat } = fake.privateChat();
    const code = await strangerCode(chat);
    expect(code).toMatch(CODE);
    // Again before approval: rejected, and no second notice (no ledger row for it).
    const again = fake.userMessage(chat, "still there?");
    expect(await deliver(node2, again)).toBe("rejected");
    const againRow = await inboxRowOfUpdate(node2.gateway, again);
    expect((await deliveriesOf(node2.gateway, againRow.session_id)).filter((d) => d.inbox_id === againRow.id)).toEqual([]);
    expect(modelCalls()).toBe(0);

    const cli = spawnSync(process.execPath, ["--import", "tsx", CLI, "pairing", "approve", code.toLowerCase()], { env: { ...process.env, ...node1.env }, encoding: "utf8", timeout: 60_000 });
    expect(cli.status, cli.stderr).toBe(0);
    expect(cli.stdout).toContain(`approved telegram:${chat.id}`);
    const list = spawnSync(process.execPath, ["--import", "tsx", CLI, "pairing", "list"], { env: { ...process.env, ...node1.env }, encoding: "utf8", timeout: 60_000 });
    expect(list.stdout).toMatch(new RegExp(`telegram:${chat.id}\\tapproved .* by cli`));

    const answered = fake.userMessage(chat, "and now?");
    expect(await deliver(node2, answered)).toBe("accepted");
    await sentTelegramReply(node2.gateway, answered);
    expect(fake.botMessagesIn(chat.id).map((m) => m.text)).toEqual([expect.stringMatching(CODE), "Echo: and now?"]);
    expect(models[1]!.calls).toBe(1);
    expect(models[0]!.calls).toBe(0);
  }, 90_000);

  it("approves a code through the API, and refuses an unknown code with a JSON error", async () => {
    const { chat } = fake.privateChat();
    const code = await strangerCode(chat);
    const wrong = await fetch(`${node2.gateway.url}/api/pairing/AAAA-BBBB`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(wrong.status).toBe(404);
    expect(((await wrong.json()) as { error: { code: string } }).error.code).toBe("pairing_not_found");
    const ok = await fetch(`${node2.gateway.url}/api/pairing/${code}`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { approved: { platform: string; user_id: string; approved_by: string } }).approved).toMatchObject({ platform: "telegram", user_id: String(chat.id), approved_by: "api" });
    const answered = fake.userMessage(chat, "thanks");
    expect(await deliver(node1, answered)).toBe("accepted");
    await sentTelegramReply(node1.gateway, answered);

    // Every message received was recorded: answered or rejected with its reason.
    const counts = await node1.gateway.store.inboxCounts();
    expect(counts.rejected).toBe(3);
    expect(counts.done).toBe(2);
  }, 90_000);
});

describe("allowlist and deny on Slack", () => {
  let fake: FakeSlack;
  let gw: TestGateway;
  const model = new CountingModel();
  const OPEN_CHANNEL = "C0OPENCHANNEL";
  const BAD_USER = "U0BADUSER001";

  beforeAll(async () => {
    fake = await FakeSlack.start({ botToken: SLACK_TOKEN, botUserId: SLACK_BOT });
    gw = await startTestGateway({
      provider: model,
      env: {
        SLACK_SIGNING_SECRET: SLACK_SECRET, SLACK_BOT_TOKEN: SLACK_TOKEN, SLACK_API_URL: fake.url, LOG_LEVEL,
        ACCESS_MODE: "allowlist", ACCESS_ALLOW: `slack:channel:${OPEN_CHANNEL}`, ACCESS_DENY: `slack:${BAD_USER}`,
      },
    });
  }, 60_000);

  afterAll(async () => {
    await gw?.stop();
    await fake?.close();
  });

  /** A mention by `user` in `channel`; resolves to its inbox row once recorded. */
  async function mention(channel: string, user: string, question: string) {
    const base = slackMention(question, channel);
    const envelope = JSON.parse(base.body) as { event: { user: string } };
    envelope.event.user = user;
    const res = await postSlackEvent(gw.gateway.url!, JSON.stringify(envelope));
    expect(res.status).toBe(200);
    return inboxRowOf(gw.gateway, "slack", base.eventId);
  }

  it("answers on an allowed channel only, never a denied user, and leaves the API to its key", async () => {
    const refusedChannel = await mention("C0OTHERCHANNEL", "U0USER00001", "am I allowed here?");
    expect(refusedChannel).toMatchObject({ status: "rejected", reason: "not_allowed" });
    const denied = await mention(OPEN_CHANNEL, BAD_USER, "and me?");
    expect(denied).toMatchObject({ status: "rejected", reason: "access_denied" });
    const allowed = await mention(OPEN_CHANNEL, "U0USER00001", "hello from the open channel");
    await waitFor(() => fake.messagesIn(OPEN_CHANNEL).find((m) => m.text === "Echo: hello from the open channel"), 10_000, "the allowed mention's reply");
    expect(allowed.status === "pending" || allowed.status === "done").toBe(true);

    const api = await askApi(gw.gateway.url!, "access-api-session", "the API is not a chat platform");
    expect(api.status, api.body).toBe(200);
    // Two turns (the allowed mention and the API request); the refused ones called no model and got no reply.
    expect(model.calls).toBe(2);
    expect(fake.messagesIn("C0OTHERCHANNEL")).toEqual([]);
    expect(fake.messagesIn(OPEN_CHANNEL)).toHaveLength(1);
  }, 60_000);
});

describe("other bots on Slack", () => {
  let fake: FakeSlack;
  let gw: TestGateway;
  const model = new CountingModel();
  const temp = makeTempDir("sb-bots");

  beforeAll(async () => {
    fake = await FakeSlack.start({ botToken: SLACK_TOKEN, botUserId: SLACK_BOT });
    const config = join(temp.dir, "bots.yaml");
    writeFileSync(config, "access:\n  allow_bots: [slack:B0FRIEND]\n  max_bot_exchanges: 2\n");
    gw = await startTestGateway({
      provider: model,
      env: { SLACK_SIGNING_SECRET: SLACK_SECRET, SLACK_BOT_TOKEN: SLACK_TOKEN, SLACK_API_URL: fake.url, LOG_LEVEL, SWITCHBOARD_CONFIG: config },
    });
  }, 60_000);

  afterAll(async () => {
    await gw?.stop();
    await fake?.close();
    temp.cleanup();
  });

  /** A reply in the thread, by a person or (with `botId`) by another bot; resolves to its inbox row, or null when it was ignored. */
  async function reply(channel: string, threadTs: string, text: string, botId?: string) {
    const base = slackThreadReply(channel, threadTs, text);
    const envelope = JSON.parse(base.body) as { event: Record<string, unknown> };
    if (botId) Object.assign(envelope.event, { bot_id: botId, user: `U0${botId}`, parent_user_id: SLACK_BOT });
    else envelope.event.parent_user_id = SLACK_BOT;
    const res = await postSlackEvent(gw.gateway.url!, JSON.stringify(envelope));
    expect(res.status).toBe(200);
    return inboxRowOf(gw.gateway, "slack", base.eventId, 2_000).catch(() => null);
  }

  it("ignores a bot that is not allowed, answers an allowed one twice in a row, then waits for a person", async () => {
    const start = slackMention("hello, start a thread", "C0BOTCHANNEL");
    expect((await postSlackEvent(gw.gateway.url!, start.body)).status).toBe(200);
    await waitFor(() => fake.messagesIn("C0BOTCHANNEL").length === 1 || null, 10_000, "the first reply");
    const thread = start.ts;
    const answers = (): number => fake.messagesIn("C0BOTCHANNEL").length;

    expect(await reply("C0BOTCHANNEL", thread, "a stranger bot speaks", "B0STRANGER")).toBeNull();
    for (const n of [1, 2]) {
      const row = await reply("C0BOTCHANNEL", thread, `friend bot message ${n}`, "B0FRIEND");
      expect(row?.status).not.toBe("rejected");
      await waitFor(() => answers() === 1 + n || null, 10_000, `the answer to bot message ${n}`);
    }
    const third = await reply("C0BOTCHANNEL", thread, "friend bot message 3", "B0FRIEND");
    expect(third).toMatchObject({ status: "rejected", reason: "bot_loop_limit" });
    // A person in the thread starts the count again.
    await reply("C0BOTCHANNEL", thread, "a person chimes in");
    await waitFor(() => answers() === 4 || null, 10_000, "the answer to the person");
    const fourth = await reply("C0BOTCHANNEL", thread, "friend bot message 4", "B0FRIEND");
    expect(fourth?.status).not.toBe("rejected");
    await waitFor(() => answers() === 5 || null, 10_000, "the answer to bot message 4");
    expect(model.calls).toBe(5);
  }, 60_000);
});
