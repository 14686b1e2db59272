import { readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
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
      workerConcurrency: 64,
      llm: { baseUrl: null, apiKey: null, model: null },
      slack: null,
      discord: null,
      bodyLimitBytes: 1024 * 1024,
      leaseTtlSeconds: 60,
      turnRecoveryIntervalMs: 1_000,
    });
  });

  it("runs serve's workers in a thread unless WORKERS_LAYOUT says inline", () => {
    expect(loadConfig({}).workersLayout).toBe("thread");
    expect(loadConfig({ WORKERS_LAYOUT: "inline" }).workersLayout).toBe("inline");
    expect(() => loadConfig({ WORKERS_LAYOUT: "process" })).toThrow(/^WORKERS_LAYOUT: /);
  });

  it("loads the YAML example of docs/configuration.md as it is written", () => {
    const doc = readFileSync(resolve(import.meta.dirname, "..", "..", "docs", "configuration.md"), "utf8");
    const yaml = /```yaml\n([\s\S]*?)```/.exec(doc)?.[1] ?? "";
    expect(yaml).toContain("access:");
    const temp = makeTempDir("sb-config-doc");
    try {
      const file = join(temp.dir, "switchboard.yaml");
      writeFileSync(file, yaml);
      const config = loadConfig({ SWITCHBOARD_CONFIG: file });
      expect(config.access).toMatchObject({ mode: "pairing", deny: ["telegram:666"], admins: ["slack:U0ADMIN"] });
      expect(config.busyModes).toMatchObject({ slack: "steer" });
    } finally {
      temp.cleanup();
    }
  });

  it("reads the access policy from ACCESS_* and names a bad subject or mode", () => {
    expect(loadConfig({}).access).toMatchObject({ mode: "open", allow: [], deny: [], admins: [] });
    const access = loadConfig({ ACCESS_MODE: "pairing", ACCESS_ALLOW: "telegram:12345, slack:team:T1", ACCESS_ADMINS: "slack:U0123" }).access;
    expect(access).toMatchObject({ mode: "pairing", allow: ["telegram:12345", "slack:team:T1"], admins: ["slack:U0123"] });
    expect(() => loadConfig({ ACCESS_MODE: "closed" })).toThrow(/^ACCESS_MODE: /);
    expect(() => loadConfig({ ACCESS_DENY: "12345" })).toThrow(/^ACCESS_DENY: subjects look like/);
  });

  it("names the bad environment variable", () => {
    expect(() => loadConfig({ PORT: "eighty" })).toThrow(/^PORT: /);
    expect(() => loadConfig({ WORKER_CONCURRENCY: "0" })).toThrow(/WORKER_CONCURRENCY/);
    expect(() => loadConfig({ LLM_BASE_URL: "not a url" })).toThrow(/LLM_BASE_URL/);
    expect(() => loadConfig({ SLACK_SIGNING_SECRET: "s" })).toThrow(/SLACK_BOT_TOKEN/);
    expect(() => loadConfig({ TURN_RECOVERY_INTERVAL_MS: "50" })).toThrow(/^TURN_RECOVERY_INTERVAL_MS: /);
    expect(loadConfig({ TURN_RECOVERY_INTERVAL_MS: "250" }).turnRecoveryIntervalMs).toBe(250);
  });

  it("DATABASE_URL selects PostgreSQL with DATABASE_SCHEMA (default 'switchboard'); a bad value is named, never echoed", () => {
    expect(loadConfig({})).toMatchObject({ databaseUrl: null, databaseSchema: "switchboard" });
    const url = "postgres://bot:s3cret-pass@db.internal:5432/switchboard";
    expect(loadConfig({ DATABASE_URL: url, DATABASE_SCHEMA: "prod_eu" })).toMatchObject({ databaseUrl: url, databaseSchema: "prod_eu" });
    expect(() => loadConfig({ DATABASE_URL: "mysql://bot:s3cret-pass@db/x" })).toThrow(/^DATABASE_URL: must be a postgres/);
    expect(() => loadConfig({ DATABASE_URL: "mysql://bot:s3cret-pass@db/x" })).not.toThrow(/s3cret/);
    expect(() => loadConfig({ DATABASE_SCHEMA: "drop table; --" })).toThrow(/^DATABASE_SCHEMA: /);
  });

  it("DATABASE_POOL_SIZE sets the PostgreSQL pool of each store (default 10), from the environment or the file's database_pool_size", () => {
    expect(loadConfig({}).databasePoolSize).toBe(10);
    expect(loadConfig({ DATABASE_POOL_SIZE: "4" }).databasePoolSize).toBe(4);
    const temp = makeTempDir("sb-config");
    try {
      const file = join(temp.dir, "switchboard.yaml");
      writeFileSync(file, "database_pool_size: 25\n");
      expect(loadConfig({ SWITCHBOARD_CONFIG: file }).databasePoolSize).toBe(25);
      expect(loadConfig({ SWITCHBOARD_CONFIG: file, DATABASE_POOL_SIZE: "6" }).databasePoolSize).toBe(6);
    } finally {
      temp.cleanup();
    }
    for (const bad of ["0", "-1", "2.5", "lots"]) expect(() => loadConfig({ DATABASE_POOL_SIZE: bad })).toThrow(/^DATABASE_POOL_SIZE: /);
  });

  it("refuses a non-loopback address without an API key", () => {
    expect(() => loadConfig({ HOST: "0.0.0.0" })).toThrow(ConfigError);
    expect(loadConfig({ HOST: "0.0.0.0", SWITCHBOARD_API_KEY: "k".repeat(16) }).host).toBe("0.0.0.0");
  });

  it("refuses a key shorter than 16 characters off loopback, and allows it on loopback", () => {
    expect(() => loadConfig({ HOST: "0.0.0.0", SWITCHBOARD_API_KEY: "k".repeat(15) })).toThrow(/SWITCHBOARD_API_KEY: must be at least 16 characters/);
    expect(() => loadConfig({ HOST: "10.1.2.3", SWITCHBOARD_API_KEY: "short" })).toThrow(ConfigError);
    expect(loadConfig({ HOST: "127.0.0.1", SWITCHBOARD_API_KEY: "short" }).apiKey).toBe("short");
  });

  it("reads the browser and proxy settings, canonical, and names a bad one", () => {
    const config = loadConfig({
      ALLOWED_ORIGINS: "https://Console.Example.com, http://localhost:3000,https://x.example:443",
      ALLOWED_HOSTS: "Gateway.Example.com,10.0.0.5",
      TRUST_PROXY: "1",
    });
    expect(config.allowedOrigins).toEqual(["https://console.example.com", "http://localhost:3000", "https://x.example"]);
    expect(config.allowedHosts).toEqual(["gateway.example.com", "10.0.0.5"]);
    expect(config.trustProxy).toBe(1);
    expect(loadConfig({}).trustProxy).toBe(0);
    expect(loadConfig({ TRUST_PROXY: "true" }).trustProxy).toBe(1);
    expect(() => loadConfig({ ALLOWED_ORIGINS: "https://x.example/path" })).toThrow(/^ALLOWED_ORIGINS: /);
    expect(() => loadConfig({ ALLOWED_ORIGINS: "*" })).toThrow(/^ALLOWED_ORIGINS: /);
    expect(() => loadConfig({ ALLOWED_HOSTS: "http://x.example" })).toThrow(/^ALLOWED_HOSTS: /);
    expect(() => loadConfig({ TRUST_PROXY: "-1" })).toThrow(/^TRUST_PROXY: /);
  });

  it("caps WebSocket connections by default and reads the caps from YAML", () => {
    expect(loadConfig({}).ws).toMatchObject({ maxConnections: 10_000, maxConnectionsPerIp: 1_000 });
    const temp = makeTempDir("sb-config");
    try {
      const file = join(temp.dir, "ws.yaml");
      writeFileSync(file, "ws:\n  max_connections: 50\n  max_connections_per_ip: 5\nallowed_origins: [\"https://a.example\"]\n");
      const config = loadConfig({ SWITCHBOARD_CONFIG: file });
      expect(config.ws).toMatchObject({ maxConnections: 50, maxConnectionsPerIp: 5 });
      expect(config.allowedOrigins).toEqual(["https://a.example"]);
      writeFileSync(file, "ws:\n  max_connections_per_ip: 0\n");
      expect(() => loadConfig({ SWITCHBOARD_CONFIG: file })).toThrow(/ws\.max_connections_per_ip/);
    } finally {
      temp.cleanup();
    }
  });

  it("reads webhook routes and busy modes from YAML, naming a bad key with its path", () => {
    const temp = makeTempDir("sb-config");
    try {
      const good = join(temp.dir, "good.yaml");
      writeFileSync(good, "webhooks:\n  gh:\n    secret: s3cret-of-sixteen-plus\n    style: github\n    reply: sync\nbusy_modes:\n  slack: interrupt\n  discord: steer\n");
      const config = loadConfig({ SWITCHBOARD_CONFIG: good });
      expect(config.webhooks.gh).toMatchObject({ secret: "s3cret-of-sixteen-plus", style: "github", reply: "sync" });
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
      writeFileSync(bad, "webhooks:\n  gh:\n    secret: s3cret-of-sixteen-plus\n    style: gitlab\n");
      expect(() => loadConfig({ SWITCHBOARD_CONFIG: bad })).toThrow(/webhooks\.gh\.style/);
      const unknown = join(temp.dir, "unknown.yaml");
      writeFileSync(unknown, "prot: 1\n");
      expect(() => loadConfig({ SWITCHBOARD_CONFIG: unknown })).toThrow(/prot/);
      const callback = join(temp.dir, "callback.yaml");
      writeFileSync(callback, "webhooks:\n  cb:\n    secret: s3cret-of-sixteen-plus\n    reply: callback\n");
      expect(() => loadConfig({ SWITCHBOARD_CONFIG: callback })).toThrow(/webhooks\.cb\.callback_url/);
    } finally {
      temp.cleanup();
    }
  });

  it("reads MCP tool servers (stdio and HTTP) from YAML", () => {
    const temp = makeTempDir("sb-config");
    try {
      const path = join(temp.dir, "mcp.yaml");
      writeFileSync(
        path,
        [
          "mcp_servers:",
          "  files:",
          "    command: npx",
          "    args: [-y, '@modelcontextprotocol/server-filesystem', /srv/shared]",
          "    env: { LOG_LEVEL: warn, PORT: 8081 }",
          "    cwd: /srv",
          "  search:",
          "    url: https://tools.example.com/mcp",
          "    headers: { Authorization: Bearer abc }",
          "    platforms: [slack, api]",
          "    timeout_ms: 15000",
        ].join("\n"),
      );
      const config = loadConfig({ SWITCHBOARD_CONFIG: path });
      expect(config.mcpServers).toEqual({
        files: {
          transport: { kind: "stdio", command: "npx", args: ["-y", "@modelcontextprotocol/server-filesystem", "/srv/shared"], env: { LOG_LEVEL: "warn", PORT: "8081" }, cwd: "/srv" },
          platforms: null,
          timeoutMs: 60_000,
        },
        search: {
          transport: { kind: "http", url: "https://tools.example.com/mcp", headers: { Authorization: "Bearer abc" } },
          platforms: ["slack", "api"],
          timeoutMs: 15_000,
        },
      });
      expect(loadConfig({}).mcpServers).toEqual({});
    } finally {
      temp.cleanup();
    }
  });

  it.each([
    ["neither command nor url", "  x:\n    args: [a]\n", /mcp_servers\.x: .*either command .* or url/],
    ["both command and url", "  x:\n    command: a\n    url: http://127.0.0.1:1/mcp\n", /mcp_servers\.x: .*either command/],
    ["stdio keys on an HTTP server", "  x:\n    url: http://127.0.0.1:1/mcp\n    env: { A: b }\n", /mcp_servers\.x\.env: only for stdio servers/],
    ["headers on a stdio server", "  x:\n    command: a\n    headers: { A: b }\n", /mcp_servers\.x\.headers: only for HTTP servers/],
    ["a URL that is not http(s)", "  x:\n    url: ftp://example.com/mcp\n", /mcp_servers\.x\.url: must be an http\(s\) URL/],
    ["a bad server name", "  'my server':\n    command: a\n", /mcp_servers\.my server: Invalid key/],
    ["an empty platform list", "  x:\n    command: a\n    platforms: []\n", /mcp_servers\.x\.platforms/],
    ["a zero timeout", "  x:\n    command: a\n    timeout_ms: 0\n", /mcp_servers\.x\.timeout_ms/],
    ["an unknown key", "  x:\n    command: a\n    restart: always\n", /mcp_servers\.x: .*restart/],
  ])("names the bad key of an MCP server: %s", (_label, yaml, error) => {
    const temp = makeTempDir("sb-config");
    try {
      const path = join(temp.dir, "mcp.yaml");
      writeFileSync(path, `mcp_servers:\n${yaml}`);
      expect(() => loadConfig({ SWITCHBOARD_CONFIG: path })).toThrow(error);
    } finally {
      temp.cleanup();
    }
  });
});

describe("config sections", () => {
  it("checks webhook routes with the webhook adapter's one schema; style and reply keep their documented defaults", () => {
    const temp = makeTempDir("sb-config-webhooks");
    try {
      const cases: Array<[string, RegExp]> = [
        [`webhooks:\n  ${"r".repeat(65)}:\n    secret: s3cret-of-sixteen-plus\n    style: github\n    reply: sync\n`, /webhooks\.r{65}: Invalid key/],
        ["webhooks:\n  cb:\n    secret: s3cret-of-sixteen-plus\n    style: github\n    reply: callback\n    callback_url: ftp://example.com/x\n", /webhooks\.cb\.callback_url/],
        ["webhooks:\n  gh:\n    secret: s3cret-of-sixteen-plus\n    style: github\n    reply: sync\n    sync_timeout_ms: 50\n", /webhooks\.gh\.sync_timeout_ms/],
        ["webhooks:\n  gh:\n    secret: s3cret-of-sixteen-plus\n    style: gitlab\n    reply: sync\n", /webhooks\.gh\.style/],
        ["webhooks:\n  gh:\n    secret: ''\n    style: github\n    reply: sync\n", /webhooks\.gh\.secret: secret must not be empty/],
      ];
      for (const [index, [yaml, error]] of cases.entries()) {
        const path = join(temp.dir, `case-${index}.yaml`);
        writeFileSync(path, yaml);
        expect(() => loadConfig({ SWITCHBOARD_CONFIG: path }), yaml).toThrow(error);
      }
      // Every fault of a route is named at once.
      const both = join(temp.dir, "both.yaml");
      writeFileSync(both, "webhooks:\n  cb:\n    secret: s3cret-of-sixteen-plus\n    style: gitlab\n    reply: callback\n");
      expect(() => loadConfig({ SWITCHBOARD_CONFIG: both })).toThrow(/webhooks\.cb\.style.*webhooks\.cb\.callback_url/);
      // A route that names only its secret is a GitHub-style sync route, as documented.
      const minimal = join(temp.dir, "minimal.yaml");
      writeFileSync(minimal, "webhooks:\n  gh:\n    secret: s3cret-of-sixteen-plus\n");
      expect(loadConfig({ SWITCHBOARD_CONFIG: minimal }).webhooks.gh).toMatchObject({ style: "github", reply: "sync" });
    } finally {
      temp.cleanup();
    }
  });

  it("reads Discord's section from the environment or the file, naming a bad public key in either", () => {
    const temp = makeTempDir("sb-config-discord");
    try {
      const key = "ab".repeat(32);
      const file = join(temp.dir, "discord.yaml");
      writeFileSync(file, `discord:\n  public_key: ${key}\n  application_id: app-1\n`);
      expect(loadConfig({ SWITCHBOARD_CONFIG: file }).discord).toEqual({
        botToken: null,
        publicKey: key,
        applicationId: "app-1",
        apiUrl: "https://discord.com/api/v10",
      });
      expect(loadConfig({ SWITCHBOARD_CONFIG: file, DISCORD_BOT_TOKEN: "t", DISCORD_API_URL: "http://127.0.0.1:9/api" }).discord).toMatchObject({ botToken: "t", apiUrl: "http://127.0.0.1:9/api" });
      expect(() => loadConfig({ DISCORD_PUBLIC_KEY: "abc" })).toThrow(/^DISCORD_PUBLIC_KEY: must be 64 hex characters/);
      writeFileSync(file, "discord:\n  public_key: abc\n");
      expect(() => loadConfig({ SWITCHBOARD_CONFIG: file })).toThrow(/discord\.public_key: must be 64 hex characters/);
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
