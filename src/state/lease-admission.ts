// The waiting side of turn admission, shared by every backend: attempt, and when a live holder or
// a busy database stands in the way, sleep until a release wakes us (in-process registry or the
// cross-process notifier), until the current lease would expire, or until the fallback poll comes
// round. No busy wait. The backend supplies the attempt; this loop holds no SQL.
import { busyBackoffMs } from "./busy-retry.js";
import type { ArmedWakeup } from "./lease-wakeups.js";
import type { LeaseAcquireOptions } from "./types.js";

/** onWait repeats at most this often while the same wait goes on. */
export const WAIT_NOTICE_INTERVAL_MS = 15_000;

/** One admission attempt. A refusal names the live holder and when its lease runs out, by the store's clock (`now`). */
export type LeaseAttempt =
  | { acquired: true }
  | { acquired: false; holder: string; expiresAt: number; now: number };

export interface AdmissionPorts {
  /** The conversation id of the session: the lease is keyed by it (may throw a contention error). */
  resolveConversationId(): string | Promise<string>;
  /** One admission transaction (may throw a contention error). */
  attempt(conversationId: string): LeaseAttempt | Promise<LeaseAttempt>;
  /** True for an error that means "the database is busy right now" (locked, connection lost): keep trying. */
  isContended(err: unknown): boolean;
  arm(conversationId: string): ArmedWakeup;
  pollIntervalMs: number;
  /** Throws when the store was closed meanwhile. */
  assertOpen(): void;
}

export async function waitForLease(ports: AdmissionPorts, options: LeaseAcquireOptions, waitSeconds: number): Promise<boolean> {
  const started = performance.now();
  const waitMs = Math.max(0, waitSeconds * 1000);
  let lastNoticeMs: number | null = null;
  let busyStreak = 0;
  while (true) {
    ports.assertOpen();
    if (options.shouldAbort?.()) return false;

    let wakeup: ArmedWakeup | null = null;
    let outcome: LeaseAttempt | "busy";
    try {
      const conversationId = await ports.resolveConversationId();
      wakeup = ports.arm(conversationId); // armed before the attempt: a release right after it still wakes us
      outcome = await ports.attempt(conversationId);
    } catch (err) {
      if (!ports.isContended(err)) {
        wakeup?.dispose();
        throw err;
      }
      outcome = "busy";
    }

    try {
      if (outcome !== "busy" && outcome.acquired) return true;
      const elapsedMs = performance.now() - started;
      let delayMs: number;
      if (outcome === "busy") {
        options.onContended?.();
        delayMs = busyBackoffMs(busyStreak++);
      } else {
        busyStreak = 0;
        if (options.onHeldGiveUp) {
          options.onHeldGiveUp();
          return false;
        }
        if (lastNoticeMs === null || elapsedMs - lastNoticeMs >= WAIT_NOTICE_INTERVAL_MS) {
          options.onWait?.(lastNoticeMs === null ? 0 : elapsedMs / 1000);
          lastNoticeMs = elapsedMs;
        }
        // Wake when the current lease runs out (a holder that stopped refreshing), or at the poll.
        const untilExpiryMs = Math.max(0, (outcome.expiresAt - outcome.now) * 1000) + 1;
        delayMs = Math.min(ports.pollIntervalMs, untilExpiryMs);
      }
      const remainingMs = waitMs - elapsedMs;
      if (remainingMs <= 0) return false;
      // A busy-path wait without an armed wake-up (reading the conversation id was itself busy) is a plain sleep.
      const sleeper = wakeup ?? { wait: (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)) };
      await sleeper.wait(Math.min(delayMs, remainingMs));
    } finally {
      wakeup?.dispose();
    }
  }
}
