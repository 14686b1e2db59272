// better-sqlite3 is synchronous: a long SQLite busy timeout would freeze the event loop while
// another writer holds the lock. So the connection does not wait inside SQLite (busy_timeout 0 by default), and this
// module retries SQLITE_BUSY / SQLITE_LOCKED asynchronously, with jitter, up to a long deadline.
import { setTimeout as sleep } from "node:timers/promises";

export function isSqliteBusy(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" && (code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED"));
}

/**
 * Exponential backoff from 1 ms to 100 ms, jittered so contending processes spread out. WAL write
 * locks are held for well under a millisecond in normal operation, so the first retries are quick.
 */
export function busyBackoffMs(attempt: number): number {
  const base = Math.min(100, 2 ** Math.min(attempt, 7));
  return base * (0.5 + Math.random());
}

const counted = { retries: 0, sleptMs: 0 };

/** This thread's busy retries since it started, and how long they slept (for /metrics). */
export function busyRetryStats(): { retries: number; sleptMs: number } {
  return { ...counted };
}

/** Run `work` until it does not fail with busy/locked, or rethrow once `deadlineMs` has passed. */
export async function retryWhileBusy<T>(work: () => T | Promise<T>, deadlineMs: number): Promise<T> {
  const started = performance.now();
  for (let attempt = 0; ; attempt++) {
    try {
      return await work();
    } catch (err) {
      if (!isSqliteBusy(err)) throw err;
      const remaining = deadlineMs - (performance.now() - started);
      if (remaining <= 0) throw err;
      const slept = performance.now();
      await sleep(Math.min(busyBackoffMs(attempt), remaining));
      counted.retries += 1;
      counted.sleptMs += performance.now() - slept;
    }
  }
}
