// Platform secrets through running gateways: a secret of ours shorter than 16 characters stops
// `switchboard serve` at start with an error naming its key; wrong signatures and secrets are
// counted per client address across the platform routes, and past a burst each further wrong one
// from that address gets 429 with Retry-After, while a right one still goes through (a platform's
// shared addresses cannot be locked out by another tenant's requests).
import { randomUUID } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { githubSignature } from "../../src/adapters/webhook/index.js";
import { spawnGatewayProcess, startTestGateway, testGatewayEnv, type TestGateway } from "../support/gateway.js";
import { makeTempDir } from "../support/tmp.js";
import { postSlackEvent, slackMention, SLACK_BOT, SLACK_TOKEN } from "./support/slack.js";

const SECRET = "webhook-secret-of-26-chars";

describe("secrets shorter than 16 characters", () => {
  const temp = makeTempDir("sb-short-secrets");
  afterAll(() => temp.cleanup());

  async function startError(env: Record<string, string>): Promise<string> {
    const started = spawnGatewayProcess(["serve"], testGatewayEnv(temp.dir, { SWITCHBOARD_API_KEY: "", LLM_BASE_URL: "", ...env }), 30_000);
    const error = await started.then(
      async (gateway) => {
        await gateway.stop();
        return "started";
      },
      (err: unknown) => String(err),
    );
    return error;
  }

  it("TELEGRAM_WEBHOOK_SECRET: start is refused, naming the key", async () => {
    const error = await startError({ TELEGRAM_BOT_TOKEN: "7012345678:AAtesttoken", TELEGRAM_WEBHOOK_SECRET: "abc123", SWITCHBOARD_CONFIG: "" });
    expect(error).toContain("exited with");
    expect(error).toContain("TELEGRAM_WEBHOOK_SECRET: must be at least 16 characters");
  }, 40_000);

  it("a webhook route's secret: start is refused, naming the key", async () => {
    const config = join(temp.dir, "short.yaml");
    writeFileSync(config, "webhooks:\n  gh:\n    secret: s3cret\n");
    const error = await startError({ SWITCHBOARD_CONFIG: config });
    expect(error).toContain("exited with");
    expect(error).toContain("webhooks.gh.secret: secret must be at least 16 characters");
  }, 40_000);
});

describe("wrong platform signatures", () => {
  const temp = makeTempDir("sb-wrong-signatures");
  let gw: TestGateway;

  beforeAll(async () => {
    const config = join(temp.dir, "switchboard.yaml");
    writeFileSync(config, JSON.stringify({ webhooks: { gh: { secret: SECRET, style: "github", reply: "callback", callback_url: "http://127.0.0.1:9/unused" } } }));
    gw = await startTestGateway({
      env: {
        SWITCHBOARD_CONFIG: config,
        TRUST_PROXY: "1",
        SLACK_SIGNING_SECRET: "8f742231b10e8888abcd99yyyzzz85a5",
        SLACK_BOT_TOKEN: SLACK_TOKEN,
        SLACK_BOT_USER_ID: SLACK_BOT,
        SLACK_API_URL: "http://127.0.0.1:9/api/",
        LOG_LEVEL: "silent",
      },
    });
  }, 60_000);

  afterAll(async () => {
    await gw?.stop();
    temp.cleanup();
  });

  function postWebhook(from: string, signedWith: string): Promise<Response> {
    const body = JSON.stringify({ id: randomUUID(), chat_id: "room", user_id: "u-1", text: "hello" });
    return fetch(`${gw.gateway.url}/webhooks/gh`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-forwarded-for": from, "x-hub-signature-256": githubSignature(signedWith, body) },
      body,
    });
  }

  it("answers 429 with Retry-After past 10 wrong signatures a minute from one address, on every platform route", async () => {
    const attacker = "203.0.113.7";
    for (let i = 0; i < 10; i++) {
      const res = await postWebhook(attacker, `wrong-secret-number-${i}`);
      expect(res.status).toBe(401);
      await res.arrayBuffer();
    }
    const refused = await postWebhook(attacker, "wrong-secret-number-11");
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe("too_many_failed_signatures");
    // The right signature from the same address still goes through.
    expect((await postWebhook(attacker, SECRET)).status).toBe(202);
    // Another platform's route, from the same address: a wrong signature meets the 429 too, a right one does not.
    const forged = await postSlackEvent(gw.gateway.url!, slackMention("hi").body, { secret: "not-the-signing-secret", headers: { "x-forwarded-for": attacker } });
    expect(forged.status).toBe(429);
    const signed = await postSlackEvent(gw.gateway.url!, slackMention("hi").body, { headers: { "x-forwarded-for": attacker } });
    expect(signed.status).toBe(200);
    // Another address is served as before.
    const other = await postWebhook("198.51.100.20", SECRET);
    expect(other.status).toBe(202);
  });

  it("counts a wrong secret under the address's own count: a right one in between does not reset it", async () => {
    const client = "203.0.113.99";
    for (let i = 0; i < 5; i++) expect((await postWebhook(client, `nope-${i}-xxxxxxxxxxxxxx`)).status).toBe(401);
    expect((await postWebhook(client, SECRET)).status).toBe(202);
    for (let i = 0; i < 5; i++) expect((await postWebhook(client, `nope-${i}-yyyyyyyyyyyyyy`)).status).toBe(401);
    expect((await postWebhook(client, "nope-after-ten-zzzzzzzzzzzz")).status).toBe(429);
  });
});
