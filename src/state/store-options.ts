// Options every SessionStore backend takes, and their defaults: the lease's timing, the host name
// dead holders are recognised by, and the cross-process wake-ups.
import type { LeaseReleaseNotifier } from "./types.js";

export interface StoreOptions {
  /** Cross-process release wake-ups (the gateway wires Redis pub/sub here). */
  notifier?: LeaseReleaseNotifier;
  /** Fallback poll while waiting for a lease, when no wake-up comes. Default 250 ms. */
  pollIntervalMs?: number;
  /** This host as holders carry it (host=..., default thisHost()): only holders on it are reaped early. */
  hostname?: string;
  /** Lease TTL when a call gives none. Default 120 s. */
  defaultTtlSeconds?: number;
  /** How long acquireSessionTurnLease waits when a call gives no waitSeconds. Default 600 s. */
  defaultWaitSeconds?: number;
  /**
   * The clock, in epoch seconds, for tests that move lease expiry by hand. Default: SQLite uses
   * this machine's clock, PostgreSQL the database server's (so machines with skewed clocks agree).
   */
  now?: () => number;
  /**
   * Estimated bytes of transcript rows a store keeps between turns (transcript-rows.ts), so a
   * turn reads only its conversation's newer rows. Default 64 MiB.
   */
  transcriptCacheBytes?: number;
}

export const STORE_DEFAULTS = {
  pollIntervalMs: 250,
  defaultTtlSeconds: 120,
  defaultWaitSeconds: 600,
};

/** PostgreSQL only: connections in a store's pool unless DATABASE_POOL_SIZE says otherwise. */
export const DEFAULT_POOL_SIZE = 10;

export function positiveSeconds(value: number, name: string): number {
  if (!Number.isFinite(value) || value <= 0) throw new RangeError(`${name} must be a positive number of seconds`);
  return value;
}
