// Gives the test run one Redis: REDIS_URL when set, else a private redis-server that this run
// starts and stops. Tests that stop and restart Redis start their own (see support/redis.ts).
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startEmbeddedRedis, type EmbeddedRedis } from "../../src/bus/embedded-redis.js";
import { deletePrefix, newRedisClient, runKeyPrefix } from "./redis.js";

let embedded: EmbeddedRedis | null = null;
let folder: string | null = null;

export async function setup(): Promise<void> {
  // Test processes and the gateways they spawn inherit it: every key of the run shares a prefix.
  process.env.SWITCHBOARD_TEST_RUN = randomUUID().slice(0, 8);
  if (process.env.REDIS_URL) return;
  folder = mkdtempSync(join(tmpdir(), "switchboard-test-redis-"));
  embedded = await startEmbeddedRedis(folder);
  process.env.REDIS_URL = embedded.url;
}

export async function teardown(): Promise<void> {
  // On a shared Redis the run leaves nothing behind (queue metadata, event streams); keys of
  // other runs are never touched. A private server goes away with its keys.
  if (!embedded && process.env.REDIS_URL) {
    const client = newRedisClient(process.env.REDIS_URL);
    try {
      await deletePrefix(client, runKeyPrefix());
    } finally {
      client.disconnect();
    }
  }
  await embedded?.stop();
  if (folder) rmSync(folder, { recursive: true, force: true });
}
