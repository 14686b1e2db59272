// Opens (and creates) the SQLite file with the pragmas the store relies on, then migrates it.
import { mkdirSync, realpathSync } from "node:fs";
import { dirname, resolve } from "node:path";
import Database from "better-sqlite3";
import { migrate } from "./migrations.js";

/** Opening and migrating may wait this long for another process (a one-off, blocking start-up cost). */
const OPEN_BUSY_TIMEOUT_MS = 10_000;

export interface OpenedDatabase {
  db: Database.Database;
  /** The file's canonical path: identifies the database for in-process lease wake-ups. */
  fileKey: string;
  inMemory: boolean;
}

export function openDatabase(path: string, busyTimeoutMs: number): OpenedDatabase {
  const inMemory = path === ":memory:" || path === "";
  if (!inMemory) mkdirSync(dirname(resolve(path)), { recursive: true });
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
