// The threads the bot takes part in are known to every gateway process and survive a restart:
// a person's plain reply in such a thread is answered by whichever process receives it.
import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeSlack } from "../support/fake-slack.js";
import { startTestGateway, waitFor } from "../support/gateway.js";
import { postSlackEvent, slackMention, slackThreadReply, SLACK_BOT, SLACK_SECRET, SLACK_TOKEN } from "./support/slack.js";

const env = (fake: FakeSlack) => ({ SLACK_SIGNING_SECRET: SLACK_SECRET, SLACK_BOT_TOKEN: SLACK_TOKEN, SLACK_API_URL: fake.url, LOG_LEVEL: "silent" });

async function repliesIn(fake: FakeSlack, channel: string, text: string): Promise<number> {
  await waitFor(() => fake.messagesIn(channel).some((m) => m.text.includes(text)), 15_000, `a reply containing "${text}"`);
  return fake.messagesIn(channel).filter((m) => m.text.includes(text)).length;
}

describe("Slack threads across gateway processes and restarts", () => {
  let fake: FakeSlack;
  beforeAll(async () => {
    fake = await FakeSlack.start({ botToken: SLACK_TOKEN, botUserId: SLACK_BOT });
  });
  afterAll(async () => {
    await fake?.close();
  });

  it("answers a plain thread reply after a restart, in a thread the bot was mentioned in before", async () => {
    const first = await startTestGateway({ env: env(fake) });
    const mention = slackMention("remember this thread");
    expect((await postSlackEvent(first.gateway.url!, mention.body)).status).toBe(200);
    expect(await repliesIn(fake, mention.channel, "remember this thread")).toBe(1);
    await first.gateway.stop(); // the process goes; its database stays

    const second = await startTestGateway({ env: { ...first.env } });
    try {
      const reply = slackThreadReply(mention.channel, mention.ts, "still there after the restart?");
      expect((await postSlackEvent(second.gateway.url!, reply.body)).status).toBe(200);
      expect(await repliesIn(fake, mention.channel, "still there after the restart?")).toBe(1);
      const thread = fake.messagesIn(mention.channel).filter((m) => m.thread_ts === mention.ts);
      expect(thread).toHaveLength(2);
    } finally {
      await second.stop();
      rmSync(first.dir, { recursive: true, force: true });
    }
  }, 60_000);

  it("answers a plain thread reply received by another running process than the mention", async () => {
    const a = await startTestGateway({ env: env(fake) });
    const b = await startTestGateway({ env: { ...a.env } });
    try {
      const mention = slackMention("which process am I talking to");
      expect((await postSlackEvent(a.gateway.url!, mention.body)).status).toBe(200);
      await repliesIn(fake, mention.channel, "which process am I talking to");
      const reply = slackThreadReply(mention.channel, mention.ts, "asking the other process now");
      expect((await postSlackEvent(b.gateway.url!, reply.body)).status).toBe(200);
      expect(await repliesIn(fake, mention.channel, "asking the other process now")).toBe(1);
    } finally {
      await b.stop();
      await a.stop();
    }
  }, 60_000);
});
