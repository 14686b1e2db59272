// SQLite's automatic WAL checkpoint runs inside whichever commit crosses its threshold: it copies
// pages into the database file and fsyncs, milliseconds during which better-sqlite3 (synchronous)
// holds the event loop, and every request arriving meanwhile waits. A store that asks for it turns
// the automatic checkpoint off on its connection and checkpoints from a worker thread with its own
// connection instead. PASSIVE checkpoints never block writers; several processes each running one
// is fine (a checkpoint already in progress makes the others skip that round).
import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";
import { DEFAULT_STEAL_AFTER_MS } from "./write-gate.js";

export interface WalCheckpointerOptions {
  /** How often the thread checkpoints. The WAL grows by what is written in between. */
  intervalMs: number;
  /** Rewind the log (RESTART) once it holds more frames than this. Default 32,768 (128 MB of 4 KB pages). */
  restartAfterFrames?: number;
  /** The thread failed: the store goes back to SQLite's automatic checkpoints. */
  onFailure: (err: Error) => void;
  /** The process's write gate for this file (write-gate.ts), held by the rewind. */
  gate?: SharedArrayBuffer;
}

interface ThreadData {
  driver: string;
  path: string;
  intervalMs: number;
  restartAfterFrames: number;
  waitingRewindFactor: number;
  gate: SharedArrayBuffer | null;
  stealGateAfterMs: number;
}


/**
 * A rewind holds the write lock (and the process's write gate) while it copies the frames written
 * since the last passive checkpoint and syncs the log and the database file, and every ack of
 * those milliseconds waits behind it. What it costs does not depend on the bound, how often it
 * comes does: under a heavy load webhooks and their turns write tens of megabytes of log a second,
 * so a large bound (128 MB of 4 KB pages) keeps the rewinds, and the slow acks they cause, rare.
 */
export const DEFAULT_RESTART_AFTER_FRAMES = 32_768;
/** A log this many times past the bound is rewound waiting on the locks, as SQLite does by itself. */
const WAITING_REWIND_FACTOR = 2;

const rewinds = { count: 0, lastAtFrames: 0 };

/** The logs this process's checkpoint threads rewound, and how long the last one was (in frames). */
export function walRewindStats(): { rewinds: number; lastAtFrames: number } {
  return { rewinds: rewinds.count, lastAtFrames: rewinds.lastAtFrames };
}

// Plain CommonJS, evaluated in the thread: no loader or build step is needed to start it.
const THREAD_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
// Errors do not cross threads intact (SQLite's lose their message): report them as text.
const fail = (err) => {
  parentPort.postMessage({ failed: String((err && err.message) || err), code: err && err.code });
  process.exit(1);
};
let db;
try {
  const Database = require(workerData.driver);
  db = new Database(workerData.path, { fileMustExist: true });
  // Nothing here waits on a lock unless rewindWaiting() asks to.
  db.pragma("busy_timeout = 0");
} catch (err) {
  fail(err);
}
// The process's write gate, taken the way write-gate.ts takes it (this thread's mark, a holder
// silent past the steal time is taken over), so this process's writers wait for a rewind at the
// gate, woken the moment it ends, instead of failing on SQLITE_BUSY and sleeping a backoff.
const gate = workerData.gate ? new Int32Array(workerData.gate) : null;
const me = require("node:worker_threads").threadId + 1;
const holdingGate = (work) => {
  if (!gate) return work();
  const started = Date.now();
  for (;;) {
    const holder = Atomics.compareExchange(gate, 0, 0, me);
    if (holder === 0) break;
    const left = workerData.stealGateAfterMs - (Date.now() - started);
    if (left > 0 && Atomics.wait(gate, 0, holder, left) !== "timed-out") continue;
    if (Atomics.compareExchange(gate, 0, holder, me) === holder) break;
  }
  try {
    return work();
  } finally {
    if (Atomics.compareExchange(gate, 0, me, 0) === me) Atomics.notify(gate, 0);
  }
};
// RESTART takes SQLite's write lock, copies the frames written since the passive checkpoint,
// syncs, and needs every reader out of the log. Waiting for those inside SQLite sleeps 1, 2, 5,
// 10 ms... holding the lock, and each writer of the process meanwhile fails with SQLITE_BUSY.
// So: the gate keeps this process's writers off first, and a
// reader still in the log makes the rewind give up at once (busy); the next round tries again.
// Each returns whether the log was rewound (SQLite reports busy when a reader kept it).
const rewound = (rows) => rows[0].busy === 0;
const rewindWithoutWaiting = () => holdingGate(() => rewound(db.pragma("wal_checkpoint(RESTART)")));
// Only for a log far past the bound (no round found a moment without readers): waiting for them
// as SQLite does, still behind the gate.
const rewindWaiting = () =>
  holdingGate(() => {
    db.pragma("busy_timeout = 1000");
    try {
      return rewound(db.pragma("wal_checkpoint(RESTART)"));
    } finally {
      db.pragma("busy_timeout = 0");
    }
  });
const checkpoint = () => {
  try {
    const [{ log }] = db.pragma("wal_checkpoint(PASSIVE)");
    // Under steady writes a passive checkpoint never finds the log fully copied when the next
    // write starts, so the log is never rewound and grows. Past the bound, RESTART copies the
    // few frames left and makes the next writer start the log over.
    if (log <= workerData.restartAfterFrames) return;
    const waiting = log > workerData.restartAfterFrames * workerData.waitingRewindFactor;
    if (waiting ? rewindWaiting() : rewindWithoutWaiting()) parentPort.postMessage({ rewoundAtFrames: log });
  } catch (err) {
    // SQLITE_BUSY: another connection is checkpointing; the next round catches up.
    if (!String(err && err.code).startsWith("SQLITE_BUSY")) fail(err);
  }
};
const timer = setInterval(checkpoint, workerData.intervalMs);
parentPort.on("message", (message) => {
  if (message !== "stop") return;
  clearInterval(timer);
  checkpoint();
  db.close();
  parentPort.close();
});
`;

export class WalCheckpointer {
  private stopped = false;

  private constructor(
    private readonly thread: Worker,
    private readonly exited: Promise<void>,
  ) {}

  static start(path: string, options: WalCheckpointerOptions): WalCheckpointer {
    const workerData: ThreadData = {
      driver: createRequire(import.meta.url).resolve("better-sqlite3"),
      path,
      intervalMs: options.intervalMs,
      restartAfterFrames: options.restartAfterFrames ?? DEFAULT_RESTART_AFTER_FRAMES,
      waitingRewindFactor: WAITING_REWIND_FACTOR,
      gate: options.gate ?? null,
      stealGateAfterMs: DEFAULT_STEAL_AFTER_MS,
    };
    const thread = new Worker(THREAD_SOURCE, { eval: true, workerData });
    // It never keeps a process alive on its own.
    thread.unref();
    const exited = new Promise<void>((resolve) => thread.once("exit", () => resolve()));
    const checkpointer = new WalCheckpointer(thread, exited);
    const failed = (err: Error): void => {
      if (checkpointer.stopped) return;
      checkpointer.stopped = true;
      options.onFailure(err);
    };
    thread.on("message", (message: { failed?: string; code?: string; rewoundAtFrames?: number }) => {
      if (message.failed !== undefined) failed(Object.assign(new Error(message.failed), { code: message.code }));
      if (message.rewoundAtFrames !== undefined) {
        rewinds.count++;
        rewinds.lastAtFrames = message.rewoundAtFrames;
      }
    });
    thread.once("error", failed);
    return checkpointer;
  }

  /** A last checkpoint, then the thread ends. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.thread.postMessage("stop");
    const timer = setTimeout(() => void this.thread.terminate(), 5_000);
    await this.exited;
    clearTimeout(timer);
  }
}
