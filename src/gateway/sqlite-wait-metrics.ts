// What this thread's SQLite writes waited for, read at scrape time: SQLITE_BUSY retries (another
// process held the lock; each one sleeps on a timer) and waits at the in-process write gate
// (another thread of this process was writing). /metrics sums serve's two threads.
import { Counter, type Registry } from "prom-client";
// From their modules, not the state index: that would load the PostgreSQL client too.
import { busyRetryStats } from "../state/busy-retry.js";
import { walRewindStats } from "../state/wal-checkpointer.js";
import { writeGateStats } from "../state/write-gate.js";

/** A counter whose value is a running total kept elsewhere. */
function totalCounter(registry: Registry, name: string, help: string, read: () => number): void {
  new Counter({
    name,
    help,
    registers: [registry],
    collect() {
      this.reset();
      this.inc(read());
    },
  });
}

export function registerSqliteWaitMetrics(registry: Registry): void {
  totalCounter(registry, "switchboard_sqlite_busy_retries_total", "SQLite calls retried after SQLITE_BUSY/LOCKED (asynchronous, on a timer)", () => busyRetryStats().retries);
  totalCounter(registry, "switchboard_sqlite_busy_retry_seconds_total", "Time SQLite calls slept in busy retries", () => busyRetryStats().sleptMs / 1000);
  totalCounter(registry, "switchboard_sqlite_write_gate_waits_total", "SQLite writes that waited for another thread of this process to finish its write", () => writeGateStats().waits);
  totalCounter(registry, "switchboard_sqlite_write_gate_wait_seconds_total", "Time SQLite writes waited at the in-process write gate", () => writeGateStats().waitedMs / 1000);
  // Each rewind holds the write gate while it syncs (wal-checkpointer.ts): how often acks met one.
  totalCounter(registry, "switchboard_sqlite_wal_rewinds_total", "Times a background checkpoint rewound the SQLite log past its bound (each holds the write gate while it syncs)", () => walRewindStats().rewinds);
}
