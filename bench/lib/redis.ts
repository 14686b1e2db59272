// The one Redis every figure of a run is measured against: REDIS_URL when set, else a private
// redis-server started for the run and stopped after it.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startEmbeddedRedis } from "../../src/gateway/embedded-redis.js";

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
