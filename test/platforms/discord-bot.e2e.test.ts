// A Discord message from the gateway bot (shaped like a discord.js Message) becomes a turn and a
// REST reply in its channel, through a real gateway. The discord.js connection itself cannot reach
// Discord here: the adapter keeps retrying it in the background while everything else works.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pino } from "pino";
import { createDiscordMessageHandler } from "../../src/adapters/discord/index.js";
import type { DiscordMessageLike } from "../../src/adapters/discord/index.js";
import { InMemoryThreadMemory } from "../../src/bus/thread-memory.js";
import { FakeDiscord } from "../support/fake-discord.js";
import { startTestGateway, waitFor, type TestGateway } from "../support/gateway.js";

const BOT_TOKEN = "bot-token-for-tests";
const BOT_USER = "1100000000000000001";
const fixture = (name: string): DiscordMessageLike =>
  JSON.parse(readFileSync(join(import.meta.dirname, "..", "fixtures", "discord", name), "utf8")) as DiscordMessageLike;

describe("Discord bot messages through the gateway", () => {
  let fake: FakeDiscord;
  let gw: TestGateway;

  beforeAll(async () => {
    fake = await FakeDiscord.start({ botToken: BOT_TOKEN, botUserId: BOT_USER });
    gw = await startTestGateway({ http: true, workers: true, env: { DISCORD_BOT_TOKEN: BOT_TOKEN, DISCORD_API_URL: fake.url, LOG_LEVEL: "silent" } });
  }, 60_000);

  afterAll(async () => {
    await gw?.stop();
    await fake?.close();
  });

  it("answers a guild mention with one REST reply in the channel, referencing the message", async () => {
    const handle = createDiscordMessageHandler({ ingress: gw.gateway.ingress, threads: new InMemoryThreadMemory(), logger: pino({ level: "silent" }), botUserId: () => BOT_USER });
    const message = fixture("message_guild_mention.json");
    expect(await handle(message)).toBe("accepted");
    // The same gateway event delivered twice (a reconnect replay) is recognised.
    expect(await handle(message)).toBe("duplicate");

    const replies = await waitFor(() => {
      const sent = fake.messagesIn(message.channelId).filter((m) => m.content.includes("can you explain monads simply?"));
      return sent.length > 0 ? sent : null;
    }, 20_000, "the reply in the channel");
    await new Promise((r) => setTimeout(r, 300));
    const all = fake.messagesIn(message.channelId);
    expect(all).toHaveLength(1);
    expect(replies[0].content).toBe("Echo: can you explain monads simply?");
    const post = fake.calls.find((c) => c.method === "POST" && c.path === `/channels/${message.channelId}/messages`);
    expect(post?.authorization).toBe(`Bot ${BOT_TOKEN}`);
    expect(post?.body).toMatchObject({ message_reference: { message_id: message.id } });
  }, 40_000);

  it("ignores messages from bots and from itself", async () => {
    const handle = createDiscordMessageHandler({ ingress: gw.gateway.ingress, threads: new InMemoryThreadMemory(), logger: pino({ level: "silent" }), botUserId: () => BOT_USER });
    const before = (await gw.gateway.store.inboxCounts()).done + (await gw.gateway.store.inboxCounts()).pending;
    expect(await handle(fixture("message_bot.json"))).toBe("ignored");
    const after = (await gw.gateway.store.inboxCounts()).done + (await gw.gateway.store.inboxCounts()).pending;
    expect(after).toBe(before);
  });
});
