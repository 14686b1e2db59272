// The data folder and the database files hold transcripts and platform tokens: only the owner
// may read them. Folders are created 0700 and files 0600; ones that already exist with wider
// modes are tightened, and the caller is told (so it can log it once).
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, statSync } from "node:fs";

export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

/** Called when an existing path had a wider mode and was tightened. */
export type OnTightened = (path: string, previousMode: number, mode: number) => void;

/** POSIX modes mean nothing on Windows. */
const applies = process.platform !== "win32";

function tighten(path: string, mode: number, onTightened?: OnTightened): void {
  if (!applies) return;
  const previous = statSync(path).mode & 0o777;
  if ((previous & ~mode) === 0) return;
  chmodSync(path, previous & mode);
  onTightened?.(path, previous, previous & mode);
}

/** Create `path` (and missing parents) 0700; tighten it if it exists with group or other bits. */
export function ensurePrivateDir(path: string, onTightened?: OnTightened): void {
  mkdirSync(path, { recursive: true, mode: PRIVATE_DIR_MODE });
  tighten(path, PRIVATE_DIR_MODE, onTightened);
}

/** Create `path` empty with mode 0600 if it is missing; tighten it if it exists with a wider mode. */
export function ensurePrivateFile(path: string, onTightened?: OnTightened): void {
  if (!existsSync(path)) closeSync(openSync(path, "a", PRIVATE_FILE_MODE));
  tighten(path, PRIVATE_FILE_MODE, onTightened);
}

/** Tighten `path` if it exists (SQLite's -wal and -shm files come and go). */
export function tightenIfPresent(path: string, onTightened?: OnTightened): void {
  if (existsSync(path)) tighten(path, PRIVATE_FILE_MODE, onTightened);
}
