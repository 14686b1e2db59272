// Reports the turn leases a store's user tries to take and gives back. The workers thread reports
// its own, so that when the thread dies the supervisor on the main thread can hand those leases on
// at once: the process (and so every holder's pid) is still alive, so nothing else could prove
// them dead before they expire.
import type { SessionStore } from "../state/types.js";

export interface LeaseObserver {
  /** Called before the acquire: a thread that dies mid-acquire is known to have tried. */
  acquiring(sessionId: string, holder: string): void;
  /** The holder does not have the lease (anymore): released, or the acquire failed. */
  released(sessionId: string, holder: string): void;
}

/** The store, with its lease acquires and releases reported to `observer`; everything else as is. */
export function observeLeases(store: SessionStore, observer: LeaseObserver): SessionStore {
  const acquire =
    (method: "acquireSessionTurnLease" | "tryAcquireSessionTurnLease") =>
    async (sessionId: string, holder: string, options?: object): Promise<boolean> => {
      observer.acquiring(sessionId, holder);
      const acquired = await (store[method] as (s: string, h: string, o?: object) => Promise<boolean>).call(store, sessionId, holder, options);
      if (!acquired) observer.released(sessionId, holder);
      return acquired;
    };
  const overrides: Partial<SessionStore> = {
    acquireSessionTurnLease: acquire("acquireSessionTurnLease"),
    tryAcquireSessionTurnLease: acquire("tryAcquireSessionTurnLease"),
    async releaseSessionTurnLease(sessionId, holder) {
      await store.releaseSessionTurnLease(sessionId, holder);
      observer.released(sessionId, holder);
    },
  };
  return new Proxy(store, {
    get(target, property) {
      if (Object.hasOwn(overrides, property)) return overrides[property as keyof SessionStore];
      const value: unknown = Reflect.get(target, property, target);
      // Methods run on the store itself (its private fields are not the proxy's).
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}
