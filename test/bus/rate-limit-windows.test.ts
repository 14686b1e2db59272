// A Retry-After one process meets holds back the same destination in every process.
import { afterEach, describe, expect, it } from "vitest";
import { RetryAfterGate } from "../../src/adapters/shared/retry-after-gate.js";
import { SharedRateLimits } from "../../src/bus/rate-limit-windows.js";
import { RateLimitedError } from "../../src/gateway/types.js";
import { waitFor } from "../support/gateway.js";
import { newRedisClient, uniquePrefix } from "../support/redis.js";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()?.();
});

/** One process's shared limits, on its own connections. */
async function processLimits(channel: string): Promise<SharedRateLimits> {
  const redis = newRedisClient();
  const subscriber = newRedisClient();
  const limits = await SharedRateLimits.start({ redis, subscriber, channel });
  cleanups.push(async () => {
    await limits.close();
    redis.disconnect();
    subscriber.disconnect();
  });
  return limits;
}

/** The gate an adapter of that platform builds on these windows. */
const gate = (limits: SharedRateLimits, scope: string): RetryAfterGate => new RetryAfterGate(limits.windows(scope));

const heldBack = (check: () => void): boolean => {
  try {
    check();
    return false;
  } catch (err) {
    if (err instanceof RateLimitedError) return true;
    throw err;
  }
};

/** A platform call that answers 429 with Retry-After `ms`. */
const rateLimited = (ms: number) => async (): Promise<never> => {
  throw new RateLimitedError(ms, "429 Too Many Requests");
};

describe("SharedRateLimits", () => {
  it("holds back the destination in another process until the window ends, and nothing else", async () => {
    const channel = `${uniquePrefix("rl")}:rate-limits`;
    const first = await processLimits(channel);
    const second = await processLimits(channel);

    await expect(gate(first, "slack").track("C1", rateLimited(600))).rejects.toBeInstanceOf(RateLimitedError);
    await waitFor(() => heldBack(() => gate(second, "slack").check("C1", "Slack preview")), 3000, "the other process to hold C1 back", 10);
    // Another destination, and the same id on another platform, are not held back.
    expect(heldBack(() => gate(second, "slack").check("C2", "Slack preview"))).toBe(false);
    expect(heldBack(() => gate(second, "discord").check("C1", "Discord preview"))).toBe(false);
    // The window ends everywhere.
    await waitFor(() => !heldBack(() => gate(second, "slack").check("C1", "Slack preview")), 3000, "the window to end", 10);
    expect(heldBack(() => gate(first, "slack").check("C1", "Slack preview"))).toBe(false);
  });

  it("never shortens a longer window it already holds, and ignores unreadable announcements", async () => {
    const channel = `${uniquePrefix("rl")}:rate-limits`;
    const first = await processLimits(channel);
    const second = await processLimits(channel);
    const publisher = newRedisClient();
    cleanups.push(() => publisher.disconnect());

    await expect(gate(second, "slack").track("C1", rateLimited(5_000))).rejects.toBeInstanceOf(RateLimitedError);
    await expect(gate(first, "slack").track("C1", rateLimited(100))).rejects.toBeInstanceOf(RateLimitedError);
    await publisher.publish(channel, "not json");
    await publisher.publish(channel, JSON.stringify({ scope: "slack", key: "C1" }));
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(heldBack(() => gate(second, "slack").check("C1", "Slack preview"))).toBe(true);
    // The first process learned the longer window from the second.
    expect(heldBack(() => gate(first, "slack").check("C1", "Slack preview"))).toBe(true);
  });
});
