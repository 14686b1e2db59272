// Turning Slack Socket Mode on: the keys, their checks (naming the key, never repeating a token),
// and which parts of the Slack adapter each combination enables.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { createAdapters } from "../../src/adapters/index.js";
import { reconnectDelayMs } from "../../src/adapters/slack/socket-mode.js";
import { loadConfig } from "../../src/main/config.js";
import { makeTempDir } from "../support/tmp.js";

const BOT_TOKEN = "xoxb-17653672481-19874698323-pdFZKVeTuE8sk7oOcBrzbqgy";
const APP_TOKEN = "xapp-1-A0APP000001-4406285312345-6f1b2c3d4e5f60718293a4b5c6d7e8f9";

function configError(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error("expected a configuration error");
}

describe("Slack Socket Mode configuration", () => {
  it("turns Socket Mode on with SLACK_APP_TOKEN and the bot token, without a signing secret", () => {
    const config = loadConfig({ SLACK_APP_TOKEN: APP_TOKEN, SLACK_BOT_TOKEN: BOT_TOKEN });
    expect(config.slack).toEqual({
      signingSecret: null,
      botToken: BOT_TOKEN,
      appToken: APP_TOKEN,
      apiUrl: "https://slack.com/api/",
      botUserId: null,
    });
    const both = loadConfig({ SLACK_APP_TOKEN: APP_TOKEN, SLACK_BOT_TOKEN: BOT_TOKEN, SLACK_SIGNING_SECRET: "s" });
    expect(both.slack).toMatchObject({ signingSecret: "s", appToken: APP_TOKEN });
    expect(loadConfig({ SLACK_SIGNING_SECRET: "s", SLACK_BOT_TOKEN: BOT_TOKEN }).slack).toMatchObject({ signingSecret: "s", appToken: null });
  });

  it("names the key that is wrong and never repeats a token", () => {
    const notAppToken = configError(() => loadConfig({ SLACK_APP_TOKEN: BOT_TOKEN, SLACK_BOT_TOKEN: BOT_TOKEN }));
    expect(notAppToken).toMatch(/^SLACK_APP_TOKEN: must be an app-level token/);
    expect(notAppToken).not.toContain(BOT_TOKEN);

    expect(configError(() => loadConfig({ SLACK_APP_TOKEN: APP_TOKEN }))).toMatch(/^SLACK_BOT_TOKEN: required/);
    const alone = configError(() => loadConfig({ SLACK_BOT_TOKEN: BOT_TOKEN }));
    expect(alone).toMatch(/SLACK_SIGNING_SECRET/);
    expect(alone).toMatch(/SLACK_APP_TOKEN/);
    expect(alone).not.toContain(BOT_TOKEN);

    const swapped = configError(() => loadConfig({ SLACK_APP_TOKEN: APP_TOKEN, SLACK_BOT_TOKEN: APP_TOKEN }));
    expect(swapped).toMatch(/^SLACK_BOT_TOKEN: is an app-level token/);
    expect(swapped).not.toContain(APP_TOKEN);
  });

  it("reads slack.app_token from the YAML file and names it when it is wrong", () => {
    const temp = makeTempDir("sb-slack-socket");
    try {
      const good = join(temp.dir, "good.yaml");
      writeFileSync(good, `slack:\n  bot_token: ${BOT_TOKEN}\n  app_token: ${APP_TOKEN}\n`);
      expect(loadConfig({ SWITCHBOARD_CONFIG: good }).slack).toMatchObject({ appToken: APP_TOKEN, signingSecret: null });

      const bad = join(temp.dir, "bad.yaml");
      writeFileSync(bad, `slack:\n  bot_token: ${BOT_TOKEN}\n  app_token: ${BOT_TOKEN}\n`);
      const message = configError(() => loadConfig({ SWITCHBOARD_CONFIG: bad }));
      expect(message).toMatch(/slack\.app_token: must be an app-level token/);
      expect(message).not.toContain(BOT_TOKEN);
    } finally {
      temp.cleanup();
    }
  });

  it("mounts the HTTP routes only with a signing secret, and starts Socket Mode only with an app token", () => {
    const deps = { logger: pino({ level: "silent" }), bodyLimitBytes: 64 * 1024 };
    const [socketOnly] = createAdapters(loadConfig({ SLACK_APP_TOKEN: APP_TOKEN, SLACK_BOT_TOKEN: BOT_TOKEN }), deps);
    expect(socketOnly.platform).toBe("slack");
    expect(socketOnly.routes).toBeUndefined();
    expect(socketOnly.start).toBeTypeOf("function");

    const [httpOnly] = createAdapters(loadConfig({ SLACK_SIGNING_SECRET: "s", SLACK_BOT_TOKEN: BOT_TOKEN }), deps);
    expect(httpOnly.routes).toBeTypeOf("function");
    expect(httpOnly.start).toBeUndefined();

    expect(createAdapters({ slack: { botToken: "", appToken: APP_TOKEN } }, deps)).toEqual([]);
  });

  it("waits longer after each failed try to connect, up to 30 s", () => {
    expect([0, 1, 2, 3, 4, 10, 50].map(reconnectDelayMs)).toEqual([0, 500, 1_000, 2_000, 4_000, 30_000, 30_000]);
  });
});
