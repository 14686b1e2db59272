import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { busyModeFor } from "../../src/gateway/config.js";
import { ConfigError, loadConfig } from "../../src/main/config.js";
import { parseCommand } from "../../src/gateway/commands.js";
import { makeTempDir } from "../support/tmp.js";

describe("configuration", () => {
  it("uses the embedded defaults of the design", () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      host: "127.0.0.1",
      port: 8080,
      dbPath: "./data/switchboard.db",
      apiKey: null,
      redisUrl: null,
      workerConcurrency: 16,
      llm: { baseUrl: null, apiKey: null, model: null },
      slack: null,
      discord: null,
      bodyLimitBytes: 1024 * 1024,
    });
  });

  it("names the bad environment variable", () => {
    expect(() => loadConfig({ PORT: "eighty" })).toThrow(/^PORT: /);
    expect(() => loadConfig({ WORKER_CONCURRENCY: "0" })).toThrow(/WORKER_CONCURRENCY/);
    expect(() => loadConfig({ LLM_BASE_URL: "not a url" })).toThrow(/LLM_BASE_URL/);
    expect(() => loadConfig({ SLACK_SIGNING_SECRET: "s" })).toThrow(/SLACK_BOT_TOKEN/);
  });

  it("refuses a non-loopback address without an API key", () => {
    expect(() => loadConfig({ HOST: "0.0.0.0" })).toThrow(ConfigError);
    expect(loadConfig({ HOST: "0.0.0.0", SWITCHBOARD_API_KEY: "k" }).host).toBe("0.0.0.0");
  });

  it("reads webhook routes and busy modes from YAML, naming a bad key with its path", () => {
    const temp = makeTempDir("sb-config");
    try {
      const good = join(temp.dir, "good.yaml");
      writeFileSync(good, "webhooks:\n  gh:\n    secret: s3cret\n    style: github\n    reply: sync\nbusy_modes:\n  slack: interrupt\n  discord: steer\n");
      const config = loadConfig({ SWITCHBOARD_CONFIG: good });
      expect(config.webhooks.gh).toMatchObject({ secret: "s3cret", style: "github", reply: "sync" });
      expect(busyModeFor(config, "slack")).toBe("interrupt");
      expect(busyModeFor(config, "discord")).toBe("steer");
      expect(busyModeFor(config, "webhook")).toBe("queue");
      expect(loadConfig({ BUSY_MODE: "steer" }).defaultBusyMode).toBe("steer");
      // Loopback image URLs only by an explicit setting.
      expect(loadConfig({}).media).toMatchObject({ allowHttpLoopback: false, maxImageBytes: 5 * 1024 * 1024, maxMessageBytes: 10 * 1024 * 1024 });
      expect(loadConfig({ MEDIA_ALLOW_HTTP_LOOPBACK: "true", MEDIA_MAX_IMAGE_BYTES: "2048" }).media).toMatchObject({ allowHttpLoopback: true, maxImageBytes: 2048 });
      expect(() => loadConfig({ MEDIA_ALLOW_HTTP_LOOPBACK: "yes" })).toThrow(/MEDIA_ALLOW_HTTP_LOOPBACK/);
      expect(() => loadConfig({ BUSY_MODE: "steering" })).toThrow(/BUSY_MODE/);

      const bad = join(temp.dir, "bad.yaml");
      writeFileSync(bad, "webhooks:\n  gh:\n    secret: s\n    style: gitlab\n");
      expect(() => loadConfig({ SWITCHBOARD_CONFIG: bad })).toThrow(/webhooks\.gh\.style/);
      const unknown = join(temp.dir, "unknown.yaml");
      writeFileSync(unknown, "prot: 1\n");
      expect(() => loadConfig({ SWITCHBOARD_CONFIG: unknown })).toThrow(/prot/);
      const callback = join(temp.dir, "callback.yaml");
      writeFileSync(callback, "webhooks:\n  cb:\n    secret: s\n    reply: callback\n");
      expect(() => loadConfig({ SWITCHBOARD_CONFIG: callback })).toThrow(/webhooks\.cb\.callback_url/);
    } finally {
      temp.cleanup();
    }
  });
});

describe("slash commands", () => {
  it("parses the shared commands and nothing else", () => {
    expect(parseCommand("/stop")).toEqual({ name: "stop", argument: "" });
    expect(parseCommand("  /NEW please")).toEqual({ name: "new", argument: "please" });
    expect(parseCommand("/reset")).toEqual({ name: "new", argument: "" });
    expect(parseCommand("/statusbar")).toBeNull();
    expect(parseCommand("please /stop")).toBeNull();
    expect(parseCommand("/unknown")).toBeNull();
  });
});
