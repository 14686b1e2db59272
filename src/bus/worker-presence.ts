// Which processes run turn workers on this deployment's queue: each says so every few seconds in
// one sorted set (member: its id, score: the time), and reads how many others said so lately. A
// process that holds in-memory wake-ups beyond its free slots keeps them only while no other
// process is there to take them: alone, a queue job would only come back to itself, at the cost of
// a job's many Redis commands a message. A process that dies stops saying so and is forgotten after
// three intervals.
import { randomUUID } from "node:crypto";
import type { Redis } from "ioredis";

export const PRESENCE_INTERVAL_MS = 2_000;
/** Missed announcements after which a process counts as gone. */
const GONE_AFTER_INTERVALS = 3;

/**
 * Announce ARGV[1], forget members older than ARGV[2] ms, keep the set ARGV[3] ms, count. Times
 * are the Redis server's, so the nodes' clocks need not agree.
 */
const BEAT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. (now - tonumber(ARGV[2])))
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return redis.call('ZCARD', KEYS[1])`;

export class WorkerPresence {
  readonly id = `${process.pid}-${randomUUID().slice(0, 8)}`;
  private others = 0;
  private timer: NodeJS.Timeout | null = null;
  private readonly listeners = new Set<() => void>();

  constructor(
    private readonly redis: Redis,
    private readonly key: string,
    private readonly intervalMs = PRESENCE_INTERVAL_MS,
  ) {}

  /** Announces this process now and then every interval. */
  start(): void {
    if (this.timer) return;
    void this.beat();
    this.timer = setInterval(() => void this.beat(), this.intervalMs);
    this.timer.unref();
  }

  /** Whether another process announced itself lately (as of the last beat). */
  othersPresent(): boolean {
    return this.others > 0;
  }

  /** Called whenever othersPresent() changes. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Stops announcing and leaves the set, so the others stop counting this process at once. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.redis.zrem(this.key, this.id).catch(() => undefined);
  }

  private async beat(): Promise<void> {
    const window = this.intervalMs * GONE_AFTER_INTERVALS;
    try {
      const members = await this.redis.eval(BEAT, 1, this.key, this.id, window, window * 10);
      this.set(Math.max(0, Number(members) - 1));
    } catch {
      // Redis unreachable: keep the last count; a spill would fail anyway and stay in memory.
    }
  }

  private set(others: number): void {
    const before = this.othersPresent();
    this.others = others;
    if (before !== this.othersPresent()) for (const listener of this.listeners) listener();
  }
}
