// A turn's reply is sent by the process that ran the turn, under the ledger's claim: no delivery
// job on the happy path; a 429 hands it to a delivery job that waits out Retry-After. Real
// gateway, Redis (the deliveries queue's own event stream is read) and SQLite; fake Slack.
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DELIVERY_QUEUE } from "../../src/gateway/queues.js";
import type { DeliveryRow } from "../../src/state/types.js";
import type { FakeSlackCall } from "../support/fake-slack.js";
import { FakeSlack } from "../support/fake-slack.js";
import { startTestGateway, waitFor, type TestGateway } from "../support/gateway.js";
import { testRedisUrl } from "../support/redis.js";
import { deliveriesOf, inboxRowOf, recordEvents, settle, stampCalls } from "./support/probes.js";
import { postSlackEvent, slackMention, SLACK_BOT, SLACK_SECRET, SLACK_TOKEN, type SlackMention } from "./support/slack.js";

describe("inline delivery of a turn's reply", () => {
  let fake: FakeSlack;
  let gw: TestGateway;
  let redis: Redis;
  let callTime: (call: FakeSlackCall) => number;

  beforeAll(async () => {
    fake = await FakeSlack.start({ botToken: SLACK_TOKEN, botUserId: SLACK_BOT });
    callTime = stampCalls(fake.calls);
    gw = await startTestGateway({ env: { SLACK_SIGNING_SECRET: SLACK_SECRET, SLACK_BOT_TOKEN: SLACK_TOKEN, SLACK_API_URL: fake.url, LOG_LEVEL: "silent" } });
    redis = new Redis(testRedisUrl());
  }, 60_000);
  afterAll(async () => {
    redis?.disconnect();
    await gw?.stop();
    await fake?.close();
  });

  /** The deliveries queue's "added" and "delayed" events (`<event>:<job id>`), from BullMQ's own event stream. */
  async function deliveryJobEvents(): Promise<string[]> {
    const entries = await redis.xrange(`${gw.gateway.config.queuePrefix}:${DELIVERY_QUEUE}:events`, "-", "+");
    return entries.flatMap(([, fields]) => {
      const event = Object.fromEntries(fields.reduce<string[][]>((pairs, value, i) => (i % 2 ? pairs : [...pairs, [value, fields[i + 1]]]), []));
      return event.event === "added" || event.event === "delayed" ? [`${event.event}:${event.jobId}`] : [];
    });
  }

  async function sentReply(mention: SlackMention, timeoutMs = 10_000): Promise<DeliveryRow> {
    const row = await inboxRowOf(gw.gateway, "slack", mention.eventId);
    return waitFor(async () => (await deliveriesOf(gw.gateway, row.session_id)).find((d) => d.inbox_id === row.id && d.status === "sent"), timeoutMs, "the reply to be sent");
  }

  it("sends the reply with no delivery job, publishes reply.delivered, and leaves the queue empty", async () => {
    const mention = slackMention("answer me without a job");
    expect((await postSlackEvent(gw.gateway.url!, mention.body)).status).toBe(200);
    const row = await inboxRowOf(gw.gateway, "slack", mention.eventId);
    const log = await recordEvents(gw.gateway, row.session_id);
    try {
      const delivery = await sentReply(mention);
      expect(delivery).toMatchObject({ attempts: 1, possible_duplicate: false });
      const delivered = await waitFor(() => log.events.find((e) => e.kind === "reply.delivered"), 5_000, "reply.delivered");
      expect(delivered.data).toMatchObject({ delivery_id: delivery.id, inbox_id: row.id, platform: "slack", platform_message_id: delivery.platform_message_id });
    } finally {
      log.stop();
    }
    await settle(300);
    expect(await deliveryJobEvents()).toEqual([]);
    const counts = await gw.gateway.queues.deliveries.getJobCounts();
    expect(Object.values(counts).every((n) => n === 0)).toBe(true);
    expect(fake.messagesIn(mention.channel).map((m) => m.text)).toEqual([`Echo: ${mention.question}`]);
  });

  it("hands a 429 to a delivery job that sends the reply once, after Retry-After", async () => {
    const mention = slackMention("answer me after the rate limit");
    const callsBefore = fake.calls.length;
    fake.rateLimitNext(1, 2, mention.channel);
    expect((await postSlackEvent(gw.gateway.url!, mention.body)).status).toBe(200);

    const delivery = await sentReply(mention, 15_000);
    expect(delivery).toMatchObject({ attempts: 2, possible_duplicate: false });
    const [limited, ...later] = fake.calls.slice(callsBefore).filter((c) => c.params.channel === mention.channel);
    expect(limited).toMatchObject({ method: "chat.postMessage", status: 429 });
    expect(later.map((c) => [c.method, c.status])).toEqual([["chat.postMessage", 200]]);
    expect(callTime(later[0]) - callTime(limited)).toBeGreaterThanOrEqual(1_950);
    // One job, for this row, added delayed by the Retry-After.
    expect((await deliveryJobEvents()).sort()).toEqual([`added:delivery-${delivery.id}`, `delayed:delivery-${delivery.id}`]);
    await settle(500);
    expect(fake.messagesIn(mention.channel).map((m) => m.text)).toEqual([`Echo: ${mention.question}`]);
  }, 30_000);
});
