// `npm start` on embedded defaults: no REDIS_URL (a private redis-server), no LLM (echo model).
// It compiles src/ into dist/ first (the whole of it on a fresh clone) and runs the result.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { makeTempDir } from "../support/tmp.js";
import { startScriptCommand, waitFor } from "../support/gateway.js";

const ROOT = join(import.meta.dirname, "..", "..");

describe("npm start", () => {
  const temp = makeTempDir("sb-start");
  let child: ReturnType<typeof spawn> | null = null;
  let output = "";

  afterAll(async () => {
    if (child && child.exitCode === null && child.signalCode === null && child.pid) {
      process.kill(-child.pid, "SIGKILL");
    }
    temp.cleanup();
  });

  it("serves /health = ok and answers a message through the echo model, then shuts down cleanly", async () => {
    const env = { ...process.env };
    for (const key of ["REDIS_URL", "LLM_BASE_URL", "LLM_API_KEY", "LLM_MODEL", "SWITCHBOARD_API_KEY", "SWITCHBOARD_DB", "SWITCHBOARD_CONFIG", "SLACK_SIGNING_SECRET", "SLACK_BOT_TOKEN", "DISCORD_BOT_TOKEN", "DISCORD_PUBLIC_KEY"]) delete env[key];
    // Run from a copy-free working directory: the data folder lands in the temp folder.
    child = spawn("npm", ["start", "--prefix", ROOT], { cwd: temp.dir, env: { ...env, PORT: "0", SWITCHBOARD_DATA_DIR: join(temp.dir, "data") }, stdio: ["ignore", "pipe", "pipe"], detached: true });
    // "close", not "exit": npm can exit before the gateway below it has written its last lines,
    // and the pipes close only once every process holding them (npm, the gateway) is gone.
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => child?.once("close", (code, signal) => r({ code, signal })));
    child.stdout?.on("data", (d: Buffer) => (output += d.toString()));
    child.stderr?.on("data", (d: Buffer) => (output += d.toString()));
    // A first start compiles all of src/ (half a minute, more while other tests run).
    const url = await waitFor(() => /switchboard listening on (\S+)/.exec(output)?.[1], 150_000, "the listening line");
    expect(existsSync(join(ROOT, "dist", "main", "cli.js"))).toBe(true);

    const health = await fetch(`${url}/health`);
    expect(health.status).toBe(200);
    const body = (await health.json()) as { status: string; redis: string; db: string };
    expect(body).toMatchObject({ status: "ok", redis: "ok", db: "ok" });
    expect(existsSync(join(temp.dir, "data", "redis", "redis.sock"))).toBe(true);

    const reply = await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "echo", messages: [{ role: "user", content: "hello from npm start" }] }),
    });
    expect(reply.status).toBe(200);
    const completion = (await reply.json()) as { choices: Array<{ message: { content: string } }> };
    expect(completion.choices[0].message.content).toContain("hello from npm start");

    // SIGTERM to the process group, as a service manager or Ctrl-C would: npm and the gateway.
    process.kill(-(child.pid as number), "SIGTERM");
    const exit = await exited;
    expect(exit.code === 0 || exit.signal === "SIGTERM", `exit ${JSON.stringify(exit)}\n${output}`).toBe(true);
    expect(output).toContain("shutting down");
    expect(output).not.toMatch(/shutdown failed|deadline passed/);
    // The private redis-server went with it.
    await waitFor(() => !existsSync(join(temp.dir, "data", "redis", "redis.sock")), 5_000, "the private redis socket to go");
  }, 180_000);

  it("is what the benchmarks run: the compiled build through bin/switchboard.js, with the start script's node flags", () => {
    const start = startScriptCommand();
    expect(start.entry).toBe(join(ROOT, "bin", "switchboard.js"));
    expect(start.nodeArgs).toEqual(["--max-semi-space-size=8", "--heap-growing-percent=50", "--single-threaded-gc"]);
  });
});
