// Worker presence on a real Redis: each process announces itself in one sorted set and counts the
// others; one that stops leaves at once, one that dies is forgotten after three missed beats.
import { afterEach, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { WorkerPresence } from "../../src/bus/worker-presence.js";
import { waitFor } from "../support/gateway.js";
import { testRedisUrl, uniquePrefix } from "../support/redis.js";

const INTERVAL_MS = 100;

describe("worker presence", () => {
  const clients: Redis[] = [];
  const presences: WorkerPresence[] = [];
  const make = (key: string): WorkerPresence => {
    const redis = new Redis(testRedisUrl());
    clients.push(redis);
    const presence = new WorkerPresence(redis, key, INTERVAL_MS);
    presences.push(presence);
    return presence;
  };

  afterEach(async () => {
    await Promise.all(presences.splice(0).map((p) => p.stop()));
    for (const client of clients.splice(0)) client.disconnect();
  });

  it("counts the others, hears one arrive and one leave, and tells its listeners", async () => {
    const key = `${uniquePrefix("presence")}:turn-workers`;
    const first = make(key);
    const changes: boolean[] = [];
    first.onChange(() => changes.push(first.othersPresent()));
    first.start();
    await new Promise((resolve) => setTimeout(resolve, INTERVAL_MS * 2));
    expect(first.othersPresent()).toBe(false);

    const second = make(key);
    second.start();
    await waitFor(() => first.othersPresent() && second.othersPresent(), 5_000, "each sees the other");

    await second.stop();
    await waitFor(() => !first.othersPresent(), 5_000, "the stopped one is gone");
    expect(changes).toEqual([true, false]);
  });

  it("forgets a process that stopped announcing without leaving (it died)", async () => {
    const key = `${uniquePrefix("presence")}:turn-workers`;
    const redis = new Redis(testRedisUrl());
    clients.push(redis);
    // A member last heard from long ago, as a dead process leaves it.
    await redis.zadd(key, 1, "dead-process");
    const alive = make(key);
    alive.start();
    await new Promise((resolve) => setTimeout(resolve, INTERVAL_MS * 2));
    expect(alive.othersPresent()).toBe(false);
    expect(await redis.zrange(key, 0, -1)).toEqual([alive.id]);
  });
});
