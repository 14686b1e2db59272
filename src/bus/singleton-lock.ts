// One holder at a time across every process of a deployment (e.g. the one Telegram long poller):
// a Redis key set only when absent, with a TTL the holder keeps renewing. A standby takes over
// when the TTL lapses, or at once when the holder is a process on this host that provably died
// (kill -9). Every change is a compare-and-set on the holder string, so a holder that lost the
// key can neither renew nor delete the new holder's.
import { randomUUID } from "node:crypto";
import type { Redis } from "ioredis";
import { isHolderProvablyDead, thisHost } from "../state/holder.js";

export interface SingletonLock {
  /** This process's holder string (`pid=<pid>:host=<host>:lock=<name>:<id>`). */
  readonly holder: string;
  /** How long the key lives without a renewal. */
  readonly ttlMs: number;
  /** True when this process holds the lock now (also when it already did). */
  tryAcquire(): Promise<boolean>;
  /** Extends the TTL; false when the lock is no longer ours. */
  renew(): Promise<boolean>;
  /** Gives the lock up (only if still ours), so a standby takes over at once. */
  release(): Promise<void>;
  /** The current holder, or null. */
  currentHolder(): Promise<string | null>;
}

/** Where an adapter gets its locks: by name, one per deployment. */
export interface SingletonLocks {
  lock(name: string, options?: { ttlMs?: number }): SingletonLock;
}

export const DEFAULT_SINGLETON_TTL_MS = 30_000;

const RENEW = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end`;
const DELETE_IF = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`;

function holderFor(name: string, host: string): string {
  return `pid=${process.pid}:host=${host}:lock=${name}:${randomUUID().slice(0, 8)}`;
}

export class RedisSingletonLock implements SingletonLock {
  readonly holder: string;

  constructor(
    private readonly redis: Redis,
    private readonly key: string,
    name: string,
    readonly ttlMs = DEFAULT_SINGLETON_TTL_MS,
    private readonly host = thisHost(),
  ) {
    this.holder = holderFor(name, host);
  }

  async tryAcquire(): Promise<boolean> {
    if ((await this.redis.set(this.key, this.holder, "PX", this.ttlMs, "NX")) === "OK") return true;
    const current = await this.redis.get(this.key);
    if (current === this.holder) return this.renew();
    if (current !== null && isHolderProvablyDead(current, this.host)) {
      // Only the dead holder's key is removed; a live newcomer's stays.
      await this.redis.eval(DELETE_IF, 1, this.key, current);
      return (await this.redis.set(this.key, this.holder, "PX", this.ttlMs, "NX")) === "OK";
    }
    return false;
  }

  async renew(): Promise<boolean> {
    return Number(await this.redis.eval(RENEW, 1, this.key, this.holder, String(this.ttlMs))) === 1;
  }

  async release(): Promise<void> {
    await this.redis.eval(DELETE_IF, 1, this.key, this.holder);
  }

  currentHolder(): Promise<string | null> {
    return this.redis.get(this.key);
  }
}

/** Locks under `<prefix>:lock:<name>` on one Redis. */
export class RedisSingletonLocks implements SingletonLocks {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  lock(name: string, options: { ttlMs?: number } = {}): SingletonLock {
    return new RedisSingletonLock(this.redis, `${this.prefix}:lock:${name}`, name, options.ttlMs ?? DEFAULT_SINGLETON_TTL_MS);
  }
}

/** One process without Redis: the locks of this process only (one holder per name). */
export class LocalSingletonLocks implements SingletonLocks {
  private readonly holders = new Map<string, string>();

  lock(name: string, options: { ttlMs?: number } = {}): SingletonLock {
    const holders = this.holders;
    const holder = holderFor(name, thisHost());
    return {
      holder,
      ttlMs: options.ttlMs ?? DEFAULT_SINGLETON_TTL_MS,
      async tryAcquire() {
        const current = holders.get(name);
        if (current !== undefined && current !== holder) return false;
        holders.set(name, holder);
        return true;
      },
      async renew() {
        return holders.get(name) === holder;
      },
      async release() {
        if (holders.get(name) === holder) holders.delete(name);
      },
      async currentHolder() {
        return holders.get(name) ?? null;
      },
    };
  }
}
