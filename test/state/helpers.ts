// Shared setup for the state tests: a SessionDB on a fresh file in a temp folder, and a clock.
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { SessionDB, type SessionDBOptions } from "../../src/state/index.js";
import { makeTempDir } from "../support/tmp.js";

export interface TempStore {
  path: string;
  dir: string;
  open(options?: SessionDBOptions): SessionDB;
  /** Close every SessionDB opened here and remove the folder. */
  cleanup(): Promise<void>;
}

export function tempStore(label = "sb-state"): TempStore {
  const temp = makeTempDir(label);
  const path = join(temp.dir, "nested", "state.db");
  const opened: SessionDB[] = [];
  return {
    path,
    dir: temp.dir,
    open(options) {
      const db = new SessionDB(path, options);
      opened.push(db);
      return db;
    },
    async cleanup() {
      for (const db of opened) await db.close();
      temp.cleanup();
    },
  };
}

/** A clock in epoch seconds the test moves by hand. */
export function manualClock(start = 1_700_000_000): { now: () => number; advance(seconds: number): void; value(): number } {
  let current = start;
  return {
    now: () => current,
    advance(seconds) {
      current += seconds;
    },
    value: () => current,
  };
}

/** The pid of a process that has exited (and been reaped): provably dead. */
export function deadPid(): number {
  const child = spawnSync(process.execPath, ["-e", ""], { stdio: "ignore" });
  if (typeof child.pid !== "number") throw new Error("could not spawn a process");
  return child.pid;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Resolve when `check` is true, polling every 5 ms; reject after `timeoutMs`. */
export async function until(check: () => boolean, timeoutMs = 5_000, what = "condition"): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

/**
 * `promise`'s value, or "still waiting" after `ms`. A guard for a wait only an event can end: a
 * wait whose poll and deadline lie far past `ms` (the waiting loop makes one last attempt at its
 * deadline, so a deadline within reach would let a missed wake-up pass unseen).
 */
export function orStillWaiting<T>(promise: Promise<T>, ms = 10_000): Promise<T | "still waiting"> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const guard = new Promise<"still waiting">((resolve) => (timer = setTimeout(() => resolve("still waiting"), ms)));
  return Promise.race([promise, guard]).finally(() => clearTimeout(timer));
}

/** A lease wait's fallback poll and deadline, far past any orStillWaiting guard. */
export const FAR_POLL_MS = 3_600_000;
export const FAR_WAIT_SECONDS = 3_600;

export function contents(rows: { content: string | null }[]): (string | null)[] {
  return rows.map((row) => row.content);
}
