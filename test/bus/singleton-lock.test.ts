import { spawnSync } from "node:child_process";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LocalSingletonLocks, RedisSingletonLocks } from "../../src/bus/singleton-lock.js";
import { thisHost } from "../../src/state/holder.js";
import { newRedisClient, uniquePrefix } from "../support/redis.js";

/** The pid of a process that has exited (and been reaped): provably dead. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"]);
  return Number(child.stdout.toString());
}

describe("RedisSingletonLock", () => {
  let redis: Redis;
  beforeAll(() => {
    redis = newRedisClient();
  });
  afterAll(() => redis.disconnect());

  it("has one holder at a time: the other can neither take, renew nor release it", async () => {
    const locks = new RedisSingletonLocks(redis, uniquePrefix("lock"));
    const a = locks.lock("poller");
    const b = locks.lock("poller");
    expect(await a.tryAcquire()).toBe(true);
    expect(await a.tryAcquire()).toBe(true);
    expect(await b.tryAcquire()).toBe(false);
    expect(await b.renew()).toBe(false);
    await b.release();
    expect(await a.currentHolder()).toBe(a.holder);
    expect(await a.renew()).toBe(true);
    await a.release();
    expect(await b.tryAcquire()).toBe(true);
    expect(await a.renew()).toBe(false);
  });

  it("is taken over when the holder stops renewing it (TTL)", async () => {
    const locks = new RedisSingletonLocks(redis, uniquePrefix("lock"));
    const a = locks.lock("poller", { ttlMs: 200 });
    const b = locks.lock("poller", { ttlMs: 200 });
    expect(await a.tryAcquire()).toBe(true);
    expect(await b.tryAcquire()).toBe(false);
    await new Promise((r) => setTimeout(r, 300));
    expect(await b.tryAcquire()).toBe(true);
    expect(await a.renew()).toBe(false);
  });

  it("is taken over at once from a dead process on this host, never from a live one or another host", async () => {
    const prefix = uniquePrefix("lock");
    const key = `${prefix}:lock:poller`;
    const locks = new RedisSingletonLocks(redis, prefix);
    const mine = locks.lock("poller");

    await redis.set(key, `pid=${process.ppid}:host=${thisHost()}:lock=poller:live`, "PX", 60_000);
    expect(await mine.tryAcquire()).toBe(false);
    await redis.set(key, `pid=${deadPid()}:host=some-other-host:lock=poller:remote`, "PX", 60_000);
    expect(await mine.tryAcquire()).toBe(false);

    await redis.set(key, `pid=${deadPid()}:host=${thisHost()}:lock=poller:dead`, "PX", 60_000);
    expect(await mine.tryAcquire()).toBe(true);
    expect(await redis.get(key)).toBe(mine.holder);
    expect(await redis.pttl(key)).toBeGreaterThan(mine.ttlMs - 5_000);
  });
});

describe("LocalSingletonLocks", () => {
  it("has one holder per name in the process", async () => {
    const locks = new LocalSingletonLocks();
    const a = locks.lock("x");
    const b = locks.lock("x");
    expect(await a.tryAcquire()).toBe(true);
    expect(await b.tryAcquire()).toBe(false);
    await a.release();
    expect(await b.tryAcquire()).toBe(true);
    expect(await locks.lock("y").tryAcquire()).toBe(true);
  });
});
