// The Discord bot end to end over its real connect path: the discord.js client of a running
// gateway fetches GET /gateway/bot from the fake REST API, logs in to a fake Discord gateway
// (HELLO, IDENTIFY, READY, GUILD_CREATE, heartbeats), receives MESSAGE_CREATE events and
// answers through REST; after the gateway drops it or asks it to reconnect, it resumes.
import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { FakeDiscord, type FakeDiscordMessage } from "../support/fake-discord.js";
import {
  FakeDiscordGateway,
  GatewayClose,
  GatewayOp,
  Intent,
  type FakeDiscordGatewayOptions,
  type FakeDiscordUser,
} from "../support/fake-discord-gateway.js";
import { startTestGateway, waitFor, type TestGateway } from "../support/gateway.js";
import { settle } from "./support/probes.js";

const LOG_LEVEL = process.env.PLATFORMS_LOG ?? "silent";
const BOT_TOKEN = "gateway-bot-token-for-tests";
const BOT: FakeDiscordUser = { id: "1100000000000000001", username: "switchboard", bot: true };
const APPLICATION_ID = "1200000000000000001";
const GUILD_ID = "1300000000000000001";
const GENERAL = "1310000000000000001";
const DM_CHANNEL = "1320000000000000001";
const ADA: FakeDiscordUser = { id: "1400000000000000001", username: "ada", globalName: "Ada Lovelace" };
const GRACE: FakeDiscordUser = { id: "1400000000000000002", username: "grace", globalName: "Grace Hopper" };
const REQUIRED_INTENTS = Intent.Guilds | Intent.GuildMessages | Intent.DirectMessages | Intent.MessageContent;
/** Long enough for a wrongly repeated reply to show itself before replies are counted. */
const SECOND_REPLY_WINDOW_MS = 400;

const GATEWAY_OPTIONS: FakeDiscordGatewayOptions = {
  botToken: BOT_TOKEN,
  bot: BOT,
  applicationId: APPLICATION_ID,
  guild: { id: GUILD_ID, name: "Analytical Engines", channels: [{ id: GENERAL, name: "general" }] },
  heartbeatIntervalMs: 500,
  requiredIntents: REQUIRED_INTENTS,
};

let discordGateway: FakeDiscordGateway;
let discordRest: FakeDiscord;
let gw: TestGateway;

beforeAll(async () => {
  discordGateway = await FakeDiscordGateway.start(GATEWAY_OPTIONS);
  discordRest = await FakeDiscord.start({
    botToken: BOT_TOKEN,
    botUserId: BOT.id,
    channels: [GENERAL, DM_CHANNEL],
    gatewayUrl: discordGateway.url,
  });
  gw = await startTestGateway({
    http: true,
    workers: true,
    env: { DISCORD_BOT_TOKEN: BOT_TOKEN, DISCORD_API_URL: discordRest.url, LOG_LEVEL },
  });
  await waitFor(() => discordGateway.connected, 15_000, "the bot's gateway session");
});

afterAll(async () => {
  await gw?.stop();
  await discordGateway?.close();
  await discordRest?.close();
});

function repliesTo(channelId: string, messageId: string): FakeDiscordMessage[] {
  return discordRest.messagesIn(channelId).filter((m) => m.message_reference?.message_id === messageId);
}

/** Every reply to a message, once one holds `text` and a repeat had time to arrive. */
async function answered(channelId: string, messageId: string, text: string): Promise<FakeDiscordMessage[]> {
  await waitFor(() => repliesTo(channelId, messageId).some((m) => m.content === text), 10_000, `the reply to ${messageId}`);
  await settle(SECOND_REPLY_WINDOW_MS);
  return repliesTo(channelId, messageId);
}

describe("the Discord bot on a Discord-like gateway", () => {
  it("logs in as Discord expects: gateway address from REST, JSON without compression, the bot token and its intents", async () => {
    const gatewayInfo = discordRest.calls.find((c) => c.method === "GET" && c.path === "/gateway/bot");
    expect(gatewayInfo).toMatchObject({ authorization: `Bot ${BOT_TOKEN}`, status: 200 });
    const [first] = discordGateway.connections;
    expect(first).toMatchObject({ path: "/", query: { v: "10", encoding: "json", compress: null }, auth: "identify" });
    expect((first.intents ?? 0) & REQUIRED_INTENTS).toBe(REQUIRED_INTENTS);
    await waitFor(() => discordGateway.connections.some((c) => c.heartbeats > 0), 5_000, "a heartbeat");
    expect(discordGateway.identifies).toBe(1);
    expect(discordGateway.problems).toEqual([]);
  });

  it("answers a guild message that mentions the bot once, in its channel, as a reply to it", async () => {
    const id = discordGateway.guildMessage({ channelId: GENERAL, author: ADA, content: `<@${BOT.id}> what is a difference engine?` });
    const replies = await answered(GENERAL, id, "Echo: what is a difference engine?");
    expect(replies).toHaveLength(1);
    const post = discordRest.calls.find((c) => c.method === "POST" && c.path === `/channels/${GENERAL}/messages` && c.status === 200);
    expect(post?.authorization).toBe(`Bot ${BOT_TOKEN}`);
    expect(post?.body).toMatchObject({ message_reference: { message_id: id } });
  });

  it("answers a direct message", async () => {
    const id = discordGateway.directMessage({ channelId: DM_CHANNEL, author: GRACE, content: "where did the bug come from?" });
    const replies = await answered(DM_CHANNEL, id, "Echo: where did the bug come from?");
    expect(replies).toHaveLength(1);
  });

  it("downloads an image attachment from Discord's CDN when the turn runs, without the bot token; the model sees it", async () => {
    const picture = Buffer.alloc(1229, 5);
    Buffer.from("89504e470d0a1a0a", "hex").copy(picture);
    const image = discordRest.addAttachment(GENERAL, "engine.png", picture, "image/png");
    const notes = discordRest.addAttachment(GENERAL, "notes.txt", Buffer.from("gears"), "text/plain; charset=utf-8");
    const before = discordRest.cdnDownloads.length;
    const id = discordGateway.guildMessage({ channelId: GENERAL, author: ADA, content: `<@${BOT.id}> what is this?`, attachments: [image, notes] });
    const expected = "Echo: what is this?\n[attachment notes.txt was not included: it is text/plain; charset=utf-8, and only images are read] [image: image/png, 1.2 KB]";
    expect(await answered(GENERAL, id, expected)).toHaveLength(1);
    // Only the image was downloaded, from its signed URL, with no credentials attached.
    expect(discordRest.cdnDownloads.slice(before)).toEqual([{ path: new URL(image.url).pathname, authorization: null, served: true }]);
    const row = await gw.gateway.store.findInboxRow("discord", id);
    const [user] = (await gw.gateway.store.getMessages(row!.session_id)).filter((m) => m.platform_message_id === id);
    expect(user.attachments).toMatchObject([{ content_type: "image/png", size_bytes: 1229, name: "engine.png" }]);
  });

  it("checks every redirect hop: a CDN URL that redirects to another host is not followed there", async () => {
    const elsewhere: string[] = [];
    const server = createServer((req, res) => {
      elsewhere.push(req.url ?? "");
      res.writeHead(200, { "content-type": "image/png" }).end(Buffer.from("89504e470d0a1a0a", "hex"));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const moved = discordRest.addRedirectingAttachment(GENERAL, "moved.png", `http://localhost:${port}/moved.png`, "image/png");
      const id = discordGateway.guildMessage({ channelId: GENERAL, author: ADA, content: `<@${BOT.id}> and this?`, attachments: [moved] });
      const expected = "Echo: and this?\n[attachment moved.png was not included: localhost is not a Discord CDN host]";
      expect(await answered(GENERAL, id, expected)).toHaveLength(1);
      expect(elsewhere).toEqual([]);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("does not answer its own message or a guild message not addressed to it", async () => {
    // Discord sends the bot its own replies too; in a DM, where every message is addressed to it.
    const own = discordGateway.directMessage({ channelId: DM_CHANNEL, author: BOT, content: "Echo: an earlier reply" });
    const chatter = discordGateway.guildMessage({ channelId: GENERAL, author: ADA, content: "just talking among ourselves" });
    // A mention sent after them: once it is answered, the two were long handled.
    const marker = discordGateway.guildMessage({ channelId: GENERAL, author: GRACE, content: `<@${BOT.id}> are you there?` });
    expect(await answered(GENERAL, marker, "Echo: are you there?")).toHaveLength(1);
    for (const [channelId, id] of [[DM_CHANNEL, own], [GENERAL, chatter]]) {
      expect(repliesTo(channelId, id)).toEqual([]);
      expect(await gw.gateway.store.findInboxRow("discord", id)).toBeNull();
    }
  });

  it("resumes after the gateway drops the connection (4000), gets the message it missed, and answers each once", async () => {
    const identifies = discordGateway.identifies;
    const resumes = discordGateway.resumes;
    discordGateway.disconnect(GatewayClose.UnknownError);
    const missed = discordGateway.guildMessage({ channelId: GENERAL, author: ADA, content: `<@${BOT.id}> sent while you were away` });
    await waitFor(() => discordGateway.resumes > resumes && discordGateway.connected, 10_000, "the bot's RESUME");

    const resumed = discordGateway.connections.at(-1);
    expect(resumed).toMatchObject({ path: "/resume", auth: "resume", query: { v: "10", encoding: "json", compress: null } });
    expect(await answered(GENERAL, missed, "Echo: sent while you were away")).toHaveLength(1);
    const next = discordGateway.guildMessage({ channelId: GENERAL, author: ADA, content: `<@${BOT.id}> and now?` });
    expect(await answered(GENERAL, next, "Echo: and now?")).toHaveLength(1);
    expect(discordGateway.identifies).toBe(identifies);
    expect(discordGateway.problems).toEqual([]);
  });

  it("resumes when the gateway asks it to reconnect (op 7) and still answers a mention once", async () => {
    const identifies = discordGateway.identifies;
    const resumes = discordGateway.resumes;
    const before = discordGateway.connections.at(-1);
    discordGateway.requestReconnect();
    await waitFor(() => discordGateway.resumes > resumes && discordGateway.connected, 10_000, "the bot's RESUME");
    // It closed the old connection without ending the session (1000 or 1001 would end it).
    expect([1000, 1001]).not.toContain(before?.closeCode);

    const id = discordGateway.guildMessage({ channelId: GENERAL, author: GRACE, content: `<@${BOT.id}> still with us?` });
    expect(await answered(GENERAL, id, "Echo: still with us?")).toHaveLength(1);
    expect(discordGateway.identifies).toBe(identifies);
    expect(discordGateway.problems).toEqual([]);
  });
});

/** Connects like a client, sends `frames` after HELLO and returns the code the gateway closes with. */
async function closeCodeAfter(url: string, frames: Array<{ op: number; d: unknown }>): Promise<number> {
  const socket = new WebSocket(`${url}/?v=10&encoding=json`);
  const signal = AbortSignal.timeout(5_000);
  try {
    const closed = once(socket, "close", { signal });
    await once(socket, "message", { signal });
    for (const frame of frames) socket.send(JSON.stringify(frame));
    const [code] = (await closed) as [number];
    return code;
  } finally {
    socket.terminate();
  }
}

describe("the fake gateway refuses what Discord refuses", () => {
  const identify = (token: string, intents: number) => ({
    op: GatewayOp.Identify,
    d: { token, intents, properties: { os: "linux", browser: "test", device: "test" } },
  });

  it("closes 4004 for a wrong token, 4014 for privileged intents the app lacks, 4003 for a command before IDENTIFY", async () => {
    const strict = await FakeDiscordGateway.start({ ...GATEWAY_OPTIONS, privilegedIntentsEnabled: false });
    try {
      expect(await closeCodeAfter(strict.url, [identify("not-the-token", Intent.Guilds)])).toBe(GatewayClose.AuthenticationFailed);
      expect(await closeCodeAfter(strict.url, [identify(BOT_TOKEN, REQUIRED_INTENTS)])).toBe(GatewayClose.DisallowedIntents);
      expect(await closeCodeAfter(strict.url, [{ op: GatewayOp.PresenceUpdate, d: {} }])).toBe(GatewayClose.NotAuthenticated);
      expect(strict.problems).toHaveLength(3);
      expect(strict.identifies).toBe(0);
    } finally {
      await strict.close();
    }
  });
});
