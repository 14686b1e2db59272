// Waiting until a `serve` has heard of another process that runs turns: from then on it keeps a
// turn in memory only while it has a free slot, and the rest of its wake-ups go on the queue.
import { Redis } from "ioredis";
import { RedisKeys } from "../../src/bus/keys.js";
import { PRESENCE_INTERVAL_MS } from "../../src/bus/worker-presence.js";
import { waitFor } from "./gateway.js";

/**
 * Every process with workers announces itself each PRESENCE_INTERVAL_MS and counts the others
 * then: once both are in the set, serve has counted the worker at its next beat.
 */
export async function untilServeSeesTheWorker(redisUrl: string, prefix: string): Promise<void> {
  const redis = new Redis(redisUrl);
  try {
    await waitFor(async () => (await redis.zcard(new RedisKeys(prefix).turnWorkers)) >= 2, 20_000, "both processes announced");
  } finally {
    redis.disconnect();
  }
  await new Promise((resolve) => setTimeout(resolve, PRESENCE_INTERVAL_MS * 2));
}
