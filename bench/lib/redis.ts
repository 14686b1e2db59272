// The one Redis every figure of a run is measured against: REDIS_URL when set, else a private
// redis-server started for the run and stopped after it.
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { startEmbeddedRedis } from "../../src/bus/embedded-redis.js";
import { redisOptionsFromUrl } from "../../src/bus/redis-url.js";
import { deletePrefix } from "../../test/support/redis.js";

export interface BenchRedis {
  url: string;
  /** True when this run started the server. */
  private: boolean;
  stop(): Promise<void>;
}

export async function benchRedis(): Promise<BenchRedis> {
  const given = process.env.REDIS_URL;
  if (given) return { url: given, private: false, stop: async () => undefined };
  const dir = mkdtempSync(join(tmpdir(), "switchboard-bench-redis-"));
  const server = await startEmbeddedRedis(dir);
  return {
    url: server.url,
    private: true,
    async stop() {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const usedPrefixes = new Set<string>();

/** A key prefix for one measurement; the run deletes its keys afterwards (see dropBenchKeys). */
export function benchPrefix(label: string): string {
  const prefix = `bench-${label}-${randomUUID().slice(0, 8)}`;
  usedPrefixes.add(prefix);
  return prefix;
}

/**
 * Delete every key under the prefixes this run used: on a shared Redis a run leaves nothing
 * behind (queued jobs of the no-workers layout, event streams, queue metadata). Other keys are
 * never touched.
 */
export async function dropBenchKeys(url: string): Promise<void> {
  const client = new Redis({ ...redisOptionsFromUrl(url), maxRetriesPerRequest: 2 });
  try {
    for (const prefix of usedPrefixes) await deletePrefix(client, prefix);
    usedPrefixes.clear();
  } finally {
    client.disconnect();
  }
}
