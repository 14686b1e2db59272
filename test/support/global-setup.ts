// Gives the test run one Redis: REDIS_URL when set, else a private redis-server that this run
// starts and stops. Tests that stop and restart Redis start their own (see support/redis.ts).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startEmbeddedRedis, type EmbeddedRedis } from "../../src/gateway/embedded-redis.js";

let embedded: EmbeddedRedis | null = null;
let folder: string | null = null;

export async function setup(): Promise<void> {
  if (process.env.REDIS_URL) return;
  folder = mkdtempSync(join(tmpdir(), "switchboard-test-redis-"));
  embedded = await startEmbeddedRedis(folder);
  process.env.REDIS_URL = embedded.url;
}

export async function teardown(): Promise<void> {
  await embedded?.stop();
  if (folder) rmSync(folder, { recursive: true, force: true });
}
