// In-process wake-ups for lease waiters. Module level on purpose: every SessionDB of this process
// shares it, so a release by one instance wakes a waiter on another instance at once.
// Keys combine the database file and the conversation id.

type Wake = () => void;

const waiters = new Map<string, Set<Wake>>();

function keyOf(fileKey: string, conversationId: string): string {
  return `${fileKey}\u0000${conversationId}`;
}

export interface ArmedWakeup {
  /** Resolve on a wake-up (possibly one that came before this call) or after `ms`. */
  wait(ms: number): Promise<void>;
  /** Wake this waiter now (used when its SessionDB closes). */
  wake(): void;
  dispose(): void;
}

/**
 * Register interest before checking the lease, then wait: a release that lands between the
 * check and the wait is not lost.
 */
export function armWakeup(fileKey: string, conversationId: string): ArmedWakeup {
  let woken = false;
  let resolveWait: (() => void) | null = null;
  const wake: Wake = () => {
    woken = true;
    resolveWait?.();
  };
  const dispose = listenForReleases(fileKey, conversationId, wake);
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

/** Call `listener` on every release of this conversation on this database file until disposed. */
export function listenForReleases(fileKey: string, conversationId: string, listener: () => void): () => void {
  const key = keyOf(fileKey, conversationId);
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

/** Wake every waiter of this conversation on this database file. */
export function wakeLocalWaiters(fileKey: string, conversationId: string): void {
  const set = waiters.get(keyOf(fileKey, conversationId));
  if (!set) return;
  for (const wake of [...set]) wake();
}

/** For tests: how many waiters are registered for a conversation. */
export function localWaiterCount(fileKey: string, conversationId: string): number {
  return waiters.get(keyOf(fileKey, conversationId))?.size ?? 0;
}
