// Opens (and creates) the SQLite file with the pragmas the store relies on, then migrates it.
// The file and its -wal/-shm companions are the owner's alone (0600): they hold transcripts.
import { mkdirSync, realpathSync } from "node:fs";
import { dirname, resolve } from "node:path";
import Database from "better-sqlite3";
import { migrate } from "./migrations.js";
import { ensurePrivateFile, PRIVATE_DIR_MODE, tightenIfPresent, type OnTightened } from "./private-files.js";

/** Opening and migrating may wait this long for another process (a one-off, blocking start-up cost). */
const OPEN_BUSY_TIMEOUT_MS = 10_000;

export interface OpenedDatabase {
  db: Database.Database;
  /** The file's canonical path: identifies the database for in-process lease wake-ups. */
  fileKey: string;
  inMemory: boolean;
}

export function openDatabase(path: string, busyTimeoutMs: number, onTightened?: OnTightened): OpenedDatabase {
  const inMemory = path === ":memory:" || path === "";
  if (!inMemory) {
    // A folder we create is private; an existing one is the operator's choice.
    mkdirSync(dirname(resolve(path)), { recursive: true, mode: PRIVATE_DIR_MODE });
    // SQLite creates a new database with the process's default mode (often 0644), and its -wal
    // and -shm files with the database's mode: an empty 0600 file first makes all three private.
    ensurePrivateFile(path, onTightened);
    for (const companion of [`${path}-wal`, `${path}-shm`]) tightenIfPresent(companion, onTightened);
  }
  const db = new Database(path);
  try {
    db.pragma(`busy_timeout = ${OPEN_BUSY_TIMEOUT_MS}`);
    if (!inMemory) db.pragma("journal_mode = WAL");
    db.pragma("synchronous = NORMAL");
    db.pragma("foreign_keys = ON");
    migrate(db);
    // From here on a lock held by another writer is retried asynchronously (busy-retry.ts).
    db.pragma(`busy_timeout = ${Math.max(0, Math.floor(busyTimeoutMs))}`);
  } catch (err) {
    db.close();
    throw err;
  }
  const fileKey = inMemory ? `:memory:${Math.random()}` : realpathSync(path);
  return { db, fileKey, inMemory };
}
