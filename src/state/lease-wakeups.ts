// In-process wake-ups for lease waiters. Module level on purpose: every store of this process
// shares it, so a release by one instance wakes a waiter on another instance at once.
// Keys combine the database's identity (a SQLite file's path, a PostgreSQL server + schema) and
// the conversation id.
import type { LeaseReleaseNotifier } from "./types.js";

type Wake = () => void;

const waiters = new Map<string, Set<Wake>>();

function keyOf(storeKey: string, conversationId: string): string {
  return `${storeKey}\u0000${conversationId}`;
}

export interface ArmedWakeup {
  /** Resolve on a wake-up (possibly one that came before this call) or after `ms`. */
  wait(ms: number): Promise<void>;
  /** Wake this waiter now (used when its store closes). */
  wake(): void;
  dispose(): void;
}

/**
 * Register interest before checking the lease, then wait: a release that lands between the
 * check and the wait is not lost.
 */
export function armWakeup(storeKey: string, conversationId: string): ArmedWakeup {
  let woken = false;
  let resolveWait: (() => void) | null = null;
  const wake: Wake = () => {
    woken = true;
    resolveWait?.();
  };
  const dispose = listenForReleases(storeKey, conversationId, wake);
  return {
    wake,
    dispose,
    wait(ms: number): Promise<void> {
      if (woken) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.max(0, ms));
        resolveWait = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    },
  };
}

/** Call `listener` on every release of this conversation on this database until disposed. */
export function listenForReleases(storeKey: string, conversationId: string, listener: () => void): () => void {
  const key = keyOf(storeKey, conversationId);
  let set = waiters.get(key);
  if (!set) {
    set = new Set();
    waiters.set(key, set);
  }
  set.add(listener);
  return () => {
    const current = waiters.get(key);
    if (!current) return;
    current.delete(listener);
    if (current.size === 0) waiters.delete(key);
  };
}

/** Wake every waiter of this conversation on this database. */
export function wakeLocalWaiters(storeKey: string, conversationId: string): void {
  const set = waiters.get(keyOf(storeKey, conversationId));
  if (!set) return;
  for (const wake of [...set]) wake();
}

/** For tests: how many waiters are registered for a conversation. */
export function localWaiterCount(storeKey: string, conversationId: string): number {
  return waiters.get(keyOf(storeKey, conversationId))?.size ?? 0;
}

/**
 * One store's side of the wake-ups, the same on every backend: the waiters it armed (woken when it
 * closes, so they see the closed store and reject instead of hanging on their timers), and the
 * notifier that carries its releases to other processes and theirs to it.
 */
export class StoreWakeups {
  private readonly armed = new Set<ArmedWakeup>();
  private readonly unsubscribeNotifier: (() => void) | null;

  constructor(
    private readonly storeKey: string,
    private readonly notifier: LeaseReleaseNotifier | null,
  ) {
    this.unsubscribeNotifier = notifier?.onRelease((conversationId) => wakeLocalWaiters(storeKey, conversationId)) ?? null;
  }

  /** armWakeup, tracked until disposed so that close() can wake it. */
  arm(conversationId: string): ArmedWakeup {
    const armed = armWakeup(this.storeKey, conversationId);
    this.armed.add(armed);
    return {
      wait: (ms) => armed.wait(ms),
      wake: () => armed.wake(),
      dispose: () => {
        this.armed.delete(armed);
        armed.dispose();
      },
    };
  }

  /** Wake the waiters of a freed lease: in this process at once, in others through the notifier. */
  announceRelease(conversationId: string): void {
    wakeLocalWaiters(this.storeKey, conversationId);
    try {
      this.notifier?.publishRelease(conversationId);
    } catch {
      // Other processes fall back to their poll; the release itself is done.
    }
  }

  listen(conversationId: string, listener: () => void): () => void {
    return listenForReleases(this.storeKey, conversationId, listener);
  }

  /** The store closes: stop hearing other processes, and wake every waiter it armed. */
  close(): void {
    this.unsubscribeNotifier?.();
    for (const wakeup of [...this.armed]) wakeup.wake();
  }
}
