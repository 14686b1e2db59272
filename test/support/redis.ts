// Redis helpers for tests: the run's shared Redis, a unique key prefix per test, and private
// servers for tests that stop and restart Redis.
import { randomUUID } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { redisOptionsFromUrl } from "../../src/bus/redis-url.js";
import { startEmbeddedRedis, type EmbeddedRedis } from "../../src/bus/embedded-redis.js";

export function testRedisUrl(): string {
  const url = process.env.REDIS_URL;
  if (!url) throw new Error("REDIS_URL is not set: the vitest global setup provides it");
  return url;
}

/** Every key of this test run starts with this (the global setup names the run). */
export function runKeyPrefix(run = process.env.SWITCHBOARD_TEST_RUN ?? "local"): string {
  return `sbtest-${run}-`;
}

/** A key prefix no other run or test shares. */
export function uniquePrefix(label = "t"): string {
  return `${runKeyPrefix()}${label}-${randomUUID().slice(0, 8)}`;
}

export function newRedisClient(url = testRedisUrl()): Redis {
  return new Redis({ ...redisOptionsFromUrl(url), maxRetriesPerRequest: null });
}

/** A private redis-server this test owns and may stop. */
export async function startPrivateRedis(): Promise<EmbeddedRedis> {
  return startEmbeddedRedis(mkdtempSync(join(tmpdir(), "switchboard-redis-")));
}

/** Delete every key under a prefix (never FLUSHALL a shared server). */
export async function deletePrefix(client: Redis, prefix: string): Promise<void> {
  let cursor = "0";
  do {
    const [next, keys] = await client.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 500);
    cursor = next;
    if (keys.length) await client.unlink(...keys);
  } while (cursor !== "0");
}

/** Jobs ever added to the turns queue of this prefix, as BullMQ's event stream tells them. */
export async function addedTurnJobs(redisUrl: string, prefix: string): Promise<number> {
  const redis = new Redis(redisOptionsFromUrl(redisUrl));
  try {
    const entries = await redis.xrange(`${prefix}:turns:events`, "-", "+");
    return entries.filter(([, fields]) => fields[0] === "event" && fields[1] === "added").length;
  } finally {
    redis.disconnect();
  }
}
