import { afterAll, afterEach, describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Redis } from "ioredis";
import { startEmbeddedRedis, type EmbeddedRedis } from "../../src/bus/embedded-redis.js";
import { redisOptionsFromUrl } from "../../src/bus/redis-url.js";
import { makeTempDir } from "../support/tmp.js";

describe("embedded redis-server", () => {
  let server: EmbeddedRedis | null = null;
  const temp = makeTempDir("sb-embedded");
  afterAll(() => temp.cleanup());
  afterEach(async () => {
    await server?.stop();
    server = null;
  });

  it("starts on a unix socket, answers PING, and removes its socket when stopped", async () => {
    server = await startEmbeddedRedis(temp.dir);
    const client = new Redis(redisOptionsFromUrl(server.url));
    expect(await client.ping()).toBe("PONG");
    client.disconnect();
    const socket = server.socketPath;
    await server.stop();
    server = null;
    expect(existsSync(socket)).toBe(false);
  });

  it("cleans up a stale server whose gateway died, and refuses to take one a live gateway owns", async () => {
    // A gateway that died without stopping its server: the server lives on, its owner is gone.
    const dead = spawn(process.execPath, ["-e", ""]);
    await new Promise((r) => dead.once("exit", r));
    const orphan = await startEmbeddedRedis(temp.dir);
    const orphanPid = orphan.pid;
    writeFileSync(join(temp.dir, "owner.pid"), String(dead.pid));
    server = await startEmbeddedRedis(temp.dir);
    expect(server.pid).not.toBe(orphanPid);
    let orphanAlive = true;
    try {
      process.kill(orphanPid, 0);
    } catch {
      orphanAlive = false;
    }
    expect(orphanAlive).toBe(false);
    // A live owner (another process) keeps its server.
    const live = spawn(process.execPath, ["-e", "setTimeout(() => {}, 30000)"]);
    try {
      writeFileSync(join(temp.dir, "owner.pid"), String(live.pid));
      await expect(startEmbeddedRedis(temp.dir)).rejects.toThrow(/belongs to a running gateway/);
      expect(Number(readFileSync(join(temp.dir, "redis.pid"), "utf8"))).toBe(server.pid);
    } finally {
      live.kill("SIGKILL");
      writeFileSync(join(temp.dir, "owner.pid"), String(process.pid));
    }
  });

  it.skipIf(process.platform !== "linux")("never stops an unrelated process the stale pid file names, even one called redis-server", async () => {
    const folder = makeTempDir("sb-embedded-stale");
    // Another program whose command line says "redis-server" but not this folder's socket.
    const unrelated = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)", "redis-server", "--port", "6390"], { stdio: "ignore" });
    try {
      await new Promise((r) => unrelated.once("spawn", r));
      writeFileSync(join(folder.dir, "redis.pid"), String(unrelated.pid));
      server = await startEmbeddedRedis(folder.dir);
      expect(server.pid).not.toBe(unrelated.pid);
      expect(unrelated.exitCode).toBeNull();
      expect(unrelated.signalCode).toBeNull();
      process.kill(unrelated.pid as number, 0);
    } finally {
      unrelated.kill("SIGKILL");
      await server?.stop();
      server = null;
      folder.cleanup();
    }
  });

  it("names the fix when no redis-server binary exists", async () => {
    await expect(startEmbeddedRedis(temp.dir, { binary: "/nonexistent/redis-server-missing" })).rejects.toThrow(
      /apt-get install redis-server.*REDIS_URL/,
    );
  });
});
