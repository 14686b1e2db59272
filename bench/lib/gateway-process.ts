// Runs `switchboard serve|worker` as its own OS process, the way `npm start` runs it (the compiled
// build, with the start script's node flags), so the figures include the real start-up wiring
// and the process's memory is its own.
import { join } from "node:path";
import { spawnGatewayProcess, type GatewayProcess } from "../../test/support/gateway.js";

export type { GatewayProcess };

export function startGatewayProcess(args: string[], env: Record<string, string>, timeoutMs = 60_000, nodeArgs: string[] = []): Promise<GatewayProcess> {
  return spawnGatewayProcess(args, env, timeoutMs, { nodeArgs, runFrom: "start-script" });
}

export const BENCH_API_KEY = "bench-api-key";

/** Environment for a gateway of this run: its own database, queue prefix and quiet logs. */
export function gatewayEnv(dir: string, redisUrl: string, prefix: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    SWITCHBOARD_DATA_DIR: dir,
    SWITCHBOARD_DB: join(dir, "switchboard.db"),
    REDIS_URL: redisUrl,
    SWITCHBOARD_QUEUE_PREFIX: prefix,
    // SQLite unless the caller passes a PostgreSQL schema of the run (bench/lib/postgres.ts).
    DATABASE_URL: "",
    DATABASE_SCHEMA: "",
    SWITCHBOARD_API_KEY: BENCH_API_KEY,
    LOG_LEVEL: "warn",
    HOST: "127.0.0.1",
    PORT: "0",
    // The offline echo model and no platforms, whatever the caller's environment says.
    SWITCHBOARD_CONFIG: "",
    LLM_BASE_URL: "",
    LLM_MODEL: "",
    ECHO_CHUNK_DELAY_MS: "0",
    SLACK_SIGNING_SECRET: "",
    SLACK_BOT_TOKEN: "",
    DISCORD_BOT_TOKEN: "",
    DISCORD_PUBLIC_KEY: "",
    ...extra,
  };
}
