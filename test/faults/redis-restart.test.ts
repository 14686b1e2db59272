// Redis stopped and restarted while signed webhooks and API requests arrive over HTTP: no 5xx
// that a sender could mistake for a lost message, and nothing lost — every delivery is recorded,
// answered once in order, and its reply reaches the sender's callback. The test owns its Redis.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmbeddedRedis, type EmbeddedRedis } from "../../src/bus/embedded-redis.js";
import { startTestGateway, waitFor, type TestGateway } from "../support/gateway.js";
import { makeTempDir } from "../support/tmp.js";
import { askApi, postWebhook, replyOf, startCallbackSink, webhookConfig, type Answer, type CallbackSink } from "./http.js";
import { transcriptProblems } from "./transcript.js";

const DELIVERIES = 120;
const CHATS = 6;
const INTERVAL_MS = 25;

describe("Redis stopped and restarted during HTTP ingress", () => {
  const temp = makeTempDir("sb-fault-redis");
  const redisDir = join(temp.dir, "redis");
  let redis: EmbeddedRedis;
  let sink: CallbackSink;
  let gw: TestGateway;

  beforeAll(async () => {
    redis = await startEmbeddedRedis(redisDir);
    sink = await startCallbackSink();
    const config = join(temp.dir, "switchboard.yaml");
    writeFileSync(config, webhookConfig(sink.url));
    // The outage makes every enqueue log a warning; only errors are of interest here.
    gw = await startTestGateway({ env: { REDIS_URL: redis.url, SWITCHBOARD_CONFIG: config, LOG_LEVEL: "error" } });
  }, 60_000);

  afterAll(async () => {
    await gw?.stop();
    await redis?.stop();
    await sink?.close();
    temp.cleanup();
  });

  it("acks every delivery without a 500 and answers all of them once Redis is back", async () => {
    const base = gw.gateway.url as string;
    const { store } = gw.gateway;
    const run = Date.now().toString(36);
    const warm = await postWebhook(base, { id: `${run}-warm`, chat_id: "warm", text: "warm up" });
    expect(warm.status).toBe(202);
    await waitFor(() => sink.replies.has(`${run}-warm`), 20_000, "the warm-up reply");

    let redisDown = false;
    let sentWhileDown = 0;
    const outage = (async () => {
      await sleep(750);
      await redis.stop();
      redisDown = true;
      await sleep(1500);
      redis = await startEmbeddedRedis(redisDir);
      redisDown = false;
    })();

    const texts = Array.from({ length: DELIVERIES }, (_, i) => `delivery ${i} for chat ${i % CHATS}`);
    const acks: Array<Promise<Answer>> = [];
    const api: Array<Promise<Answer>> = [];
    for (let i = 0; i < DELIVERIES; i++) {
      if (redisDown) sentWhileDown++;
      acks.push(postWebhook(base, { id: `${run}-${i}`, chat_id: `chat-${i % CHATS}-${run}`, text: texts[i] }));
      // A few API requests that wait for their reply through the outage.
      if (redisDown && api.length < 3 && i % 5 === 0) api.push(askApi(base, `fault-api-${run}-${api.length}`, `api during outage ${i}`));
      await sleep(INTERVAL_MS);
    }
    await outage;
    const answers = await Promise.all(acks);
    expect(sentWhileDown, "deliveries sent while Redis was down").toBeGreaterThanOrEqual(20);
    expect(api.length).toBe(3);

    // The ack never becomes a 500: the inbox row is the durable record, Redis only the wake-up.
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s !== 202), `statuses: ${JSON.stringify(statuses)}`).toEqual([]);

    const apiAnswers = await Promise.all(api);
    for (const answer of apiAnswers) {
      expect(answer.status, answer.body).toBe(200);
      expect(replyOf(answer)).toMatch(/api during outage \d+/);
    }

    await waitFor(async () => (await store.inboxCounts()).pending === 0, 60_000, "every inbox row processed", 200);
    await waitFor(() => texts.every((_, i) => sink.replies.has(`${run}-${i}`)), 60_000, "every reply delivered to the callback", 200);

    // Each delivery: one inbox row, answered; each chat's transcript in inbox (arrival) order.
    const byChat = new Map<string, Array<{ rowId: number; text: string; sessionId: string }>>();
    for (let i = 0; i < DELIVERIES; i++) {
      const row = await store.findInboxRow("webhook", `faults:${run}-${i}`);
      expect(row?.status, `delivery ${i}`).toBe("done");
      if (!row) continue;
      const chat = `chat-${i % CHATS}`;
      byChat.set(chat, [...(byChat.get(chat) ?? []), { rowId: row.id, text: texts[i], sessionId: row.session_id }]);
      const replies = sink.replies.get(`${run}-${i}`) ?? [];
      expect(replies.every((r) => r.includes(texts[i])), `replies to ${i}: ${JSON.stringify(replies)}`).toBe(true);
    }
    const problems: string[] = [];
    for (const entries of byChat.values()) {
      entries.sort((a, b) => a.rowId - b.rowId);
      problems.push(...(await transcriptProblems(store, entries[0].sessionId, entries.map((e) => e.text))));
    }
    expect(problems).toEqual([]);
  }, 120_000);
});
