// A real gateway for end-to-end client tests: in-process, on a free loopback port, with its own
// temp folder, SQLite file and Redis key prefix on the test Redis.
import { join } from "node:path";
import { loadConfig, type GatewayConfig } from "../../../src/main/config.js";
import { startGateway, type GatewayHandle } from "../../../src/main/server.js";
import { deletePrefix, newRedisClient, testRedisUrl, uniquePrefix } from "../../support/redis.js";
import { makeTempDir } from "../../support/tmp.js";

export interface TestGateway {
  gateway: GatewayHandle;
  url: string;
  dir: string;
  dbPath: string;
  prefix: string;
  /** The environment a worker process needs to join this gateway. */
  workerEnv: Record<string, string>;
  stop(): Promise<void>;
}

export async function startTestGateway(options: {
  env?: Record<string, string>;
  overrides?: Partial<GatewayConfig>;
  workers: boolean;
  label?: string;
}): Promise<TestGateway> {
  const temp = makeTempDir(`sb-${options.label ?? "clients"}`);
  const prefix = uniquePrefix(options.label ?? "clients");
  const dbPath = join(temp.dir, "switchboard.db");
  const workerEnv: Record<string, string> = {
    REDIS_URL: testRedisUrl(),
    SWITCHBOARD_DB: dbPath,
    SWITCHBOARD_QUEUE_PREFIX: prefix,
    LOG_LEVEL: "silent",
    ...options.env,
  };
  const config = loadConfig({ ...workerEnv, SWITCHBOARD_DATA_DIR: join(temp.dir, "data"), PORT: "0" }, options.overrides);
  let gateway: GatewayHandle;
  try {
    gateway = await startGateway(config, { http: true, workers: options.workers });
  } catch (err) {
    temp.cleanup();
    throw err;
  }
  return {
    gateway,
    url: gateway.url ?? "",
    dir: temp.dir,
    dbPath,
    prefix,
    workerEnv,
    async stop() {
      await gateway.stop();
      const redis = newRedisClient();
      try {
        await deletePrefix(redis, prefix);
      } finally {
        redis.disconnect();
        temp.cleanup();
      }
    },
  };
}
