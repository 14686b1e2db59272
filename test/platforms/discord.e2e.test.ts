// Discord interactions through a real gateway: Ed25519-signed requests in, a deferred response,
// then the reply as a follow-up on the interaction's webhook at the fake Discord API.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeDiscord, type FakeDiscordCall, type FakeDiscordMessage } from "../support/fake-discord.js";
import { startTestGateway, waitFor, type TestGateway } from "../support/gateway.js";
import type { DeliveryRow } from "../../src/state/types.js";
import {
  askInteraction,
  discordKeyPair,
  pingInteraction,
  postInteraction,
  signInteraction,
  DISCORD_APPLICATION_ID,
  type AskInteraction,
  type DiscordKeys,
} from "./support/discord.js";
import { deliveriesOf, inboxRowOf, inboxTotal, settle, stampCalls, transcript } from "./support/probes.js";

const LOG_LEVEL = process.env.PLATFORMS_LOG ?? "silent";
/** Slow enough that a streamed follow-up is still being written when its first post answers. */
const CHUNK_DELAY_MS = 100;

let keys: DiscordKeys;
let fake: FakeDiscord;
let gw: TestGateway;
let callTime: (call: FakeDiscordCall) => number;

beforeAll(async () => {
  keys = discordKeyPair();
  // No bot token: interactions only (a token would also start the gateway bot).
  fake = await FakeDiscord.start({ botToken: "unused-bot-token", applicationId: DISCORD_APPLICATION_ID });
  callTime = stampCalls(fake.calls);
  gw = await startTestGateway({
    http: true,
    workers: true,
    env: {
      DISCORD_PUBLIC_KEY: keys.publicKeyHex,
      DISCORD_APPLICATION_ID,
      DISCORD_API_URL: fake.url,
      ECHO_CHUNK_DELAY_MS: String(CHUNK_DELAY_MS),
      LOG_LEVEL,
    },
  });
});

afterAll(async () => {
  await gw?.stop();
  await fake?.close();
});

function followUpsOf(ask: AskInteraction): FakeDiscordMessage[] {
  return [...fake.messages.values()].filter((m) => m.interaction_token === ask.token);
}

function webhookCallsOf(ask: AskInteraction): FakeDiscordCall[] {
  return fake.calls.filter((c) => c.path.startsWith(`/webhooks/${DISCORD_APPLICATION_ID}/${ask.token}`));
}

async function sentReply(ask: AskInteraction, timeoutMs = 10_000): Promise<DeliveryRow> {
  const row = await inboxRowOf(gw.gateway, "discord", ask.id);
  return waitFor(
    async () => (await deliveriesOf(gw.gateway, row.session_id)).find((d) => d.inbox_id === row.id && d.status === "sent"),
    timeoutMs,
    `sent reply to interaction ${ask.id}`,
  );
}

describe("Discord interactions through the gateway", () => {
  it("answers a signed /ask with a deferred response, then a follow-up holding the echo", async () => {
    const ask = askInteraction("what is the tallest mountain?");
    const res = await postInteraction(gw.gateway.url!, ask.body, signInteraction(keys.privateKey, ask.body));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ type: 5 });

    const delivery = await sentReply(ask);
    const followUps = followUpsOf(ask);
    expect(followUps).toHaveLength(1);
    expect(followUps[0]).toMatchObject({ via: "webhook", content: `Echo: ${ask.question}` });
    expect(delivery).toMatchObject({ platform: "discord", status: "sent", platform_message_id: followUps[0].id });
    // The follow-up was created once (then edited as the reply streamed), never posted twice.
    const posts = webhookCallsOf(ask).filter((c) => c.method === "POST");
    expect(posts.map((c) => c.status)).toEqual([200]);
    expect(posts[0].authorization).toBeNull();
    const row = await inboxRowOf(gw.gateway, "discord", ask.id);
    expect(await transcript(gw.gateway, row.session_id)).toEqual([`user: ${ask.question}`, `assistant: Echo: ${ask.question}`]);
  });

  it("refuses a body changed after signing with 401 and runs no turn", async () => {
    const before = await inboxTotal(gw.gateway);
    const ask = askInteraction("what is the deepest lake?");
    const headers = signInteraction(keys.privateKey, ask.body);
    const tampered = ask.body.replace("deepest lake", "deepest sea");
    expect(tampered).not.toBe(ask.body);
    const res = await postInteraction(gw.gateway.url!, tampered, headers);
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("invalid_signature");
    await settle(300);
    expect(await inboxTotal(gw.gateway)).toBe(before);
    expect(await gw.gateway.store.findInboxRow("discord", ask.id)).toBeNull();
    expect(webhookCallsOf(ask)).toHaveLength(0);
  });

  it("answers a signed PING with PONG and records nothing", async () => {
    const before = await inboxTotal(gw.gateway);
    const body = pingInteraction();
    const res = await postInteraction(gw.gateway.url!, body, signInteraction(keys.privateKey, body));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ type: 1 });
    expect(await inboxTotal(gw.gateway)).toBe(before);
  });

  it("sends nothing to the interaction's webhook before retry_after when the streamed follow-up is rate limited", async () => {
    const ask = askInteraction("short question");
    const callsBefore = fake.calls.length;
    fake.rateLimitNext(1, 1);
    const res = await postInteraction(gw.gateway.url!, ask.body, signInteraction(keys.privateKey, ask.body));
    expect(await res.json()).toEqual({ type: 5 });

    await sentReply(ask, 15_000);
    const [limited, ...later] = fake.calls.slice(callsBefore);
    expect(limited).toMatchObject({ method: "POST", status: 429 });
    expect(later.length).toBeGreaterThan(0);
    for (const call of later) expect(callTime(call) - callTime(limited)).toBeGreaterThanOrEqual(950);
    expect(followUpsOf(ask).map((m) => m.content)).toEqual([`Echo: ${ask.question}`]);
  });
});
