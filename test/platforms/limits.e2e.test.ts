// Usage limits and usage records through running gateways on Telegram, with a fake OpenAI-compatible
// model that reports its usage. Messages a minute per user, counted in Redis by two nodes: the
// third message gets one polite notice and no model call, the fourth neither. Tokens a day per
// conversation: once a turn's reported tokens pass the limit, the next message gets a notice and
// no model call. /api/usage sums exactly what the model reported, and /metrics counts it.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai.js";
import { FakeTelegram, type FakeUpdate } from "../support/fake-telegram.js";
import { startTestGateway, waitFor, type TestGateway } from "../support/gateway.js";
import { makeTempDir } from "../support/tmp.js";
import { inboxRowOfUpdate, sentTelegramReply, TELEGRAM_BOT_USERNAME, TELEGRAM_SECRET, TELEGRAM_TOKEN } from "./support/telegram.js";

const LOG_LEVEL = process.env.PLATFORMS_LOG ?? "silent";
const temp = makeTempDir("sb-limits");

/** A gateway on Telegram (webhook) and the fake model, with `yaml` as its config file. */
async function telegramNode(fake: FakeTelegram, model: FakeOpenAI, yaml: string, shareWith?: TestGateway): Promise<TestGateway> {
  const config = join(temp.dir, `limits-${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(config, yaml);
  const env = {
    ...(shareWith?.env ?? {}),
    SWITCHBOARD_CONFIG: config,
    TELEGRAM_BOT_TOKEN: TELEGRAM_TOKEN, TELEGRAM_WEBHOOK_SECRET: TELEGRAM_SECRET, TELEGRAM_WEBHOOK_URL: "https://bot.example.test/telegram/webhook", TELEGRAM_API_URL: fake.url,
    LLM_BASE_URL: model.url, LLM_API_KEY: model.apiKey, LLM_MODEL: "fake-model", LOG_LEVEL,
  };
  const node = await startTestGateway({ env });
  // The node registers the webhook (with its secret) at start; Telegram delivers with it.
  await waitFor(() => fake.webhook !== null, 10_000, "setWebhook");
  return node;
}

async function deliver(fake: FakeTelegram, node: TestGateway, update: FakeUpdate): Promise<string> {
  const delivery = await fake.deliverWebhook(update, `${node.gateway.url}/telegram/webhook`);
  expect(delivery.status, delivery.body).toBe(200);
  return (JSON.parse(delivery.body) as { status: string }).status;
}

/** Counts are per calendar minute: start a burst well inside one, so it is counted in one window. */
async function insideOneMinute(): Promise<void> {
  const intoMinute = Date.now() % 60_000;
  if (intoMinute > 45_000) await new Promise((resolve) => setTimeout(resolve, 60_000 - intoMinute + 100));
}

afterAll(() => temp.cleanup());

describe("messages a minute per user, on two nodes", () => {
  let fake: FakeTelegram;
  let model: FakeOpenAI;
  let node1: TestGateway;
  let node2: TestGateway;

  beforeAll(async () => {
    fake = await FakeTelegram.start({ token: TELEGRAM_TOKEN, username: TELEGRAM_BOT_USERNAME });
    model = await startFakeOpenAI({ apiKey: "model-key" });
    const yaml = "limits:\n  user: { messages_per_minute: 2 }\n";
    node1 = await telegramNode(fake, model, yaml);
    node2 = await telegramNode(fake, model, yaml, node1);
  }, 60_000);

  afterAll(async () => {
    await node2?.stop();
    await node1?.stop();
    await model?.close();
    await fake?.close();
  });

  it("answers two, refuses the third with one notice and the fourth silently, with no model call", async () => {
    await insideOneMinute();
    const { chat } = fake.privateChat();
    const first = fake.userMessage(chat, "first question");
    expect(await deliver(fake, node1, first)).toBe("accepted");
    await sentTelegramReply(node1.gateway, first);
    const second = fake.userMessage(chat, "second question");
    expect(await deliver(fake, node2, second)).toBe("accepted");
    await sentTelegramReply(node2.gateway, second);

    const third = fake.userMessage(chat, "third question");
    expect(await deliver(fake, node1, third)).toBe("rejected");
    expect(await inboxRowOfUpdate(node1.gateway, third)).toMatchObject({ status: "rejected", reason: "user_rate_limited" });
    const notice = await waitFor(() => fake.botMessagesIn(chat.id).find((m) => m.text.includes("a minute")), 10_000, "the notice");
    expect(notice.text).toMatch(/faster than this bot answers them \(2 a minute\)/);
    const fourth = fake.userMessage(chat, "fourth question");
    expect(await deliver(fake, node2, fourth)).toBe("rejected");
    const fourthRow = await inboxRowOfUpdate(node2.gateway, fourth);
    expect(fourthRow.reason).toBe("user_rate_limited");
    expect(await node2.gateway.store.deliveriesForSession(fourthRow.session_id)).toHaveLength(3);
    expect(fake.botMessagesIn(chat.id)).toHaveLength(3);
    expect(model.completionRequests()).toHaveLength(2);
  }, 90_000);
});

describe("tokens a day per conversation, and the usage records", () => {
  let fake: FakeTelegram;
  let model: FakeOpenAI;
  let node: TestGateway;

  beforeAll(async () => {
    fake = await FakeTelegram.start({ token: TELEGRAM_TOKEN, username: TELEGRAM_BOT_USERNAME });
    model = await startFakeOpenAI({ apiKey: "model-key" });
    node = await telegramNode(fake, model, "limits:\n  conversation: { tokens_per_day: 5 }\n");
  }, 60_000);

  afterAll(async () => {
    await node?.stop();
    await model?.close();
    await fake?.close();
  });

  it("refuses a conversation past its tokens with one notice, and sums exactly what the model reported", async () => {
    const { chat, user } = fake.privateChat();
    const first = fake.userMessage(chat, "tell me something");
    expect(await deliver(fake, node, first)).toBe("accepted");
    await sentTelegramReply(node.gateway, first);
    const [reported] = model.reportedUsage();
    expect(reported!.total_tokens).toBeGreaterThan(5);

    // The count reaches Redis just after the turn is stored: the next message waits on nothing else.
    const refused = await waitFor(async () => {
      const update = fake.userMessage(chat, "and more?");
      expect(await deliver(fake, node, update)).not.toBe("duplicate");
      const row = await inboxRowOfUpdate(node.gateway, update);
      return row.status === "rejected" ? row : null;
    }, 10_000, "a message refused for the conversation's tokens", 100);
    expect(refused.reason).toBe("conversation_token_limit");
    await waitFor(() => fake.botMessagesIn(chat.id).find((m) => m.text.includes("today's usage limit")), 10_000, "the notice");
    const again = fake.userMessage(chat, "still?");
    expect(await deliver(fake, node, again)).toBe("rejected");
    expect(fake.botMessagesIn(chat.id).filter((m) => m.text.includes("today's usage limit"))).toHaveLength(1);
    expect(model.completionRequests()).toHaveLength(model.reportedUsage().length);

    const sum = (key: string): number => model.reportedUsage().reduce((n, usage) => n + (usage[key] ?? 0), 0);
    const answer = await fetch(`${node.gateway.url}/api/usage?platform=telegram&user=${user.id}&since=${Math.floor(Date.now() / 1000) - 600}`);
    expect(answer.status).toBe(200);
    const body = (await answer.json()) as { totals: Array<{ model: string; turns: number; model_calls: number; prompt_tokens: number; completion_tokens: number; tool_calls: number }> };
    expect(body.totals).toEqual([{ model: "fake-model", turns: model.reportedUsage().length, model_calls: model.reportedUsage().length, prompt_tokens: sum("prompt_tokens"), completion_tokens: sum("completion_tokens"), tool_calls: 0 }]);
    const other = await (await fetch(`${node.gateway.url}/api/usage?platform=telegram&user=someone-else`)).json() as { totals: unknown[] };
    expect(other.totals).toEqual([]);
    expect((await fetch(`${node.gateway.url}/api/usage?since=yesterday-ish`)).status).toBe(400);
    const metrics = await (await fetch(`${node.gateway.url}/metrics`)).text();
    expect(metrics).toContain(`switchboard_model_tokens_total{platform="telegram",model="fake-model",kind="prompt"} ${sum("prompt_tokens")}`);
  }, 90_000);
});
