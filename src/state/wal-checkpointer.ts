// SQLite's automatic WAL checkpoint runs inside whichever commit crosses its threshold: it copies
// pages into the database file and fsyncs, milliseconds during which better-sqlite3 (synchronous)
// holds the event loop, and every request arriving meanwhile waits. A store that asks for it turns
// the automatic checkpoint off on its connection and checkpoints from a worker thread with its own
// connection instead. PASSIVE checkpoints never block writers; several processes each running one
// is fine (a checkpoint already in progress makes the others skip that round).
import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";

export interface WalCheckpointerOptions {
  /** How often the thread checkpoints. The WAL grows by what is written in between. */
  intervalMs: number;
  /** Rewind the log (RESTART) once it holds more frames than this. Default 4096 (16 MB of 4 KB pages). */
  restartAfterFrames?: number;
  /** The thread failed: the store goes back to SQLite's automatic checkpoints. */
  onFailure: (err: Error) => void;
}

interface ThreadData {
  driver: string;
  path: string;
  intervalMs: number;
  restartAfterFrames: number;
}


export const DEFAULT_RESTART_AFTER_FRAMES = 4096;

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
  // Waiting here blocks only this thread.
  db.pragma("busy_timeout = 1000");
} catch (err) {
  fail(err);
}
const checkpoint = () => {
  try {
    const [{ log }] = db.pragma("wal_checkpoint(PASSIVE)");
    // Under steady writes a passive checkpoint never finds the log fully copied when the next
    // write starts, so the log is never rewound and grows. Past the bound, RESTART copies the
    // few frames left and makes the next writer start the log over; writers wait meanwhile
    // (asynchronously, on SQLITE_BUSY), the event loop does not.
    if (log > workerData.restartAfterFrames) db.pragma("wal_checkpoint(RESTART)");
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
    thread.on("message", (message: { failed?: string; code?: string }) => {
      if (message.failed !== undefined) failed(Object.assign(new Error(message.failed), { code: message.code }));
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
