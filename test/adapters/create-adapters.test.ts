import { generateKeyPairSync } from "node:crypto";
import { describe, expect, it } from "vitest";
import { createAdapters } from "../../src/adapters/index.js";
import { loadConfig } from "../../src/main/config.js";
import { silentLogger } from "./support/http.js";

const deps = { logger: silentLogger, bodyLimitBytes: 1024 * 1024 };

function publicKeyHex(): string {
  const jwk = generateKeyPairSync("ed25519").publicKey.export({ format: "jwk" });
  return Buffer.from(jwk.x as string, "base64url").toString("hex");
}

describe("createAdapters", () => {
  it("builds nothing without configuration", () => {
    expect(createAdapters(loadConfig({}), deps)).toEqual([]);
  });

  it("needs both the Slack secret and token", () => {
    expect(() => loadConfig({ SLACK_SIGNING_SECRET: "s" })).toThrow(/SLACK_BOT_TOKEN/);
    expect(createAdapters({ slack: { signingSecret: "s", botToken: "" } }, deps)).toEqual([]);
    const config = loadConfig({ SLACK_SIGNING_SECRET: "s", SLACK_BOT_TOKEN: "xoxb-1" });
    expect(config.slack?.apiUrl).toBe("https://slack.com/api/");
    expect(createAdapters(config, deps).map((a) => a.platform)).toEqual(["slack"]);
  });

  it("enables Discord with a public key (routes) or a bot token (gateway client)", () => {
    const withKey = createAdapters(loadConfig({ DISCORD_PUBLIC_KEY: publicKeyHex() }), deps);
    expect(withKey.map((a) => a.platform)).toEqual(["discord"]);
    expect(withKey[0].routes).toBeTypeOf("function");
    expect(withKey[0].start).toBeUndefined();
    const withToken = createAdapters(loadConfig({ DISCORD_BOT_TOKEN: "t" }), deps);
    expect(withToken[0].routes).toBeUndefined();
    expect(withToken[0].start).toBeTypeOf("function");
  });

  it("refuses a malformed Discord public key at start-up", () => {
    expect(() => createAdapters(loadConfig({ DISCORD_PUBLIC_KEY: "abc" }), deps)).toThrow(/DISCORD_PUBLIC_KEY/);
  });

  it("enables Telegram with a bot token: the webhook route with a secret, long polling (start) either way", () => {
    const token = "7012345678:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw4";
    const polling = createAdapters(loadConfig({ TELEGRAM_BOT_TOKEN: token }), deps);
    expect(polling.map((a) => a.platform)).toEqual(["telegram"]);
    expect(polling[0].routes).toBeUndefined();
    expect(polling[0].start).toBeTypeOf("function");
    const webhook = createAdapters(loadConfig({ TELEGRAM_BOT_TOKEN: token, TELEGRAM_WEBHOOK_SECRET: "s3cret-of-sixteen-plus" }), deps);
    expect(webhook[0].routes).toBeTypeOf("function");
    expect(() => loadConfig({ TELEGRAM_WEBHOOK_SECRET: "s3cret-of-sixteen-plus" })).toThrow(/TELEGRAM_BOT_TOKEN/);
  });

  it("enables webhooks when routes exist, and all three together", () => {
    const env = {
      SLACK_SIGNING_SECRET: "s",
      SLACK_BOT_TOKEN: "xoxb-1",
      DISCORD_PUBLIC_KEY: publicKeyHex(),
      DISCORD_API_URL: "http://127.0.0.1:1/api/v10",
    };
    const adapters = createAdapters(
      loadConfig(env, { webhooks: { ci: { secret: "s3cret-of-sixteen-plus", style: "github", reply: "sync" } } }),
      deps,
    );
    expect(adapters.map((a) => a.platform)).toEqual(["slack", "discord", "webhook"]);
    expect(createAdapters({ webhooks: {} }, deps)).toEqual([]);
  });
});
