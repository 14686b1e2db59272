// loadAdapters builds what createAdapters builds, and imports a platform's module (and SDK) only
// when the config enables that platform: checked in a fresh process, whose module graph is its own.
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createAdapters } from "../../src/adapters/index.js";
import { loadAdapters } from "../../src/adapters/load-adapters.js";
import { loadConfig } from "../../src/main/config.js";
import { silentLogger } from "./support/http.js";

const deps = { logger: silentLogger, bodyLimitBytes: 1024 * 1024 };
const ROOT = join(import.meta.dirname, "..", "..");

describe("loadAdapters", () => {
  it("enables the same adapters as createAdapters", async () => {
    for (const env of [{}, { SLACK_SIGNING_SECRET: "s", SLACK_BOT_TOKEN: "xoxb-1" }, { DISCORD_BOT_TOKEN: "t", TELEGRAM_BOT_TOKEN: "1:abc" }]) {
      const config = loadConfig(env);
      expect((await loadAdapters(config, deps)).map((a) => a.platform)).toEqual(createAdapters(config, deps).map((a) => a.platform));
    }
  });

  it("leaves grammy (Telegram's SDK) unloaded when only Slack is configured; createAdapters loads it", () => {
    const probe = (build: string): unknown => {
      const script = `
        import { createRequire } from "node:module";
        import { pino } from "pino";
        import { loadConfig } from "./src/main/config.ts";
        const config = loadConfig({ SLACK_SIGNING_SECRET: "s", SLACK_BOT_TOKEN: "xoxb-1" });
        const deps = { logger: pino({ level: "silent" }), bodyLimitBytes: 1024 };
        const adapters = ${build};
        const cache = Object.keys(createRequire(import.meta.url).cache);
        console.log(JSON.stringify({ platforms: adapters.map((a) => a.platform), grammy: cache.some((p) => p.includes("/grammy/")) }));
      `;
      const run = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { cwd: ROOT, encoding: "utf8", timeout: 60_000 });
      expect(run.status, run.stderr).toBe(0);
      return JSON.parse(run.stdout.trim().split("\n").pop() as string);
    };
    expect(probe(`await (await import("./src/adapters/load-adapters.ts")).loadAdapters(config, deps)`)).toEqual({ platforms: ["slack"], grammy: false });
    // The control: the probe does see a loaded SDK.
    expect(probe(`(await import("./src/adapters/index.ts")).createAdapters(config, deps)`)).toEqual({ platforms: ["slack"], grammy: true });
  }, 90_000);
});
