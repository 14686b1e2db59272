// Redis connection options from a URL: redis://, rediss:// and unix:///path/to/socket.
import type { RedisOptions } from "ioredis";

/**
 * Options every connection of ours takes. ioredis 5.8+ sends CLIENT SETINFO while connecting, and
 * a SUBSCRIBE queued before the connection was ready can then be written ahead of its ready check
 * (INFO), which Redis refuses in subscriber mode and the start fails (ioredis issue 2037).
 */
const COMMON: RedisOptions = { disableClientInfo: true };

export function redisOptionsFromUrl(url: string): RedisOptions {
  if (url.startsWith("unix://")) {
    const parsed = new URL(url);
    const db = parsed.searchParams.get("db");
    return { ...COMMON, path: decodeURIComponent(parsed.pathname), ...(db ? { db: Number(db) } : {}) };
  }
  const parsed = new URL(url);
  if (parsed.protocol !== "redis:" && parsed.protocol !== "rediss:") {
    throw new Error(`REDIS_URL: unsupported scheme ${parsed.protocol} (use redis://, rediss:// or unix://)`);
  }
  const db = parsed.pathname.length > 1 ? Number(parsed.pathname.slice(1)) : undefined;
  return {
    ...COMMON,
    host: parsed.hostname || "127.0.0.1",
    port: parsed.port ? Number(parsed.port) : 6379,
    ...(parsed.username ? { username: decodeURIComponent(parsed.username) } : {}),
    ...(parsed.password ? { password: decodeURIComponent(parsed.password) } : {}),
    ...(db !== undefined && !Number.isNaN(db) ? { db } : {}),
    ...(parsed.protocol === "rediss:" ? { tls: {} } : {}),
  };
}
