import { afterEach, describe, expect, it } from "vitest";
import { existsSync } from "node:fs";
import { Redis } from "ioredis";
import { startEmbeddedRedis, type EmbeddedRedis } from "../../src/gateway/embedded-redis.js";
import { redisOptionsFromUrl } from "../../src/gateway/redis-url.js";
import { makeTempDir } from "../support/tmp.js";

describe("embedded redis-server", () => {
  let server: EmbeddedRedis | null = null;
  const temp = makeTempDir("sb-embedded");
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

  it("names the fix when no redis-server binary exists", async () => {
    await expect(startEmbeddedRedis(temp.dir, { binary: "/nonexistent/redis-server-missing" })).rejects.toThrow(
      /apt-get install redis-server.*REDIS_URL/,
    );
  });
});
