// Brings dist/ up to date with src/ before the gateway runs from it: `tsc -b` compiles only what
// changed since the last build (its record is dist/.tsbuildinfo) and returns in about half a
// second when nothing did, so the compiled JavaScript is never older than the sources. One
// process builds at a time: a start that finds another one building waits for it rather than
// importing files that are being rewritten.
import { spawnSync } from "node:child_process";
import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = fileURLToPath(new URL("..", import.meta.url));
const DIST = join(ROOT, "dist");
const LOCK = join(DIST, ".build-lock");
const LOCK_WAIT_MS = 120_000;
const LOCK_POLL_MS = 100;

/** The TypeScript compiler's command line, or null when TypeScript is not installed (`npm install --omit=dev`). */
export function typescriptCompiler() {
  try {
    return createRequire(import.meta.url).resolve("typescript/bin/tsc");
  } catch {
    return null;
  }
}

/** Runs `tsc -b tsconfig.build.json` under the build lock; its output goes to stderr. True when dist/ is current. */
export function buildDist(tsc) {
  mkdirSync(DIST, { recursive: true });
  takeLock();
  try {
    const build = spawnSync(process.execPath, [tsc, "-b", join(ROOT, "tsconfig.build.json")], { cwd: ROOT, stdio: ["ignore", 2, 2] });
    return build.status === 0;
  } finally {
    rmSync(LOCK, { force: true });
  }
}

function takeLock() {
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    try {
      const fd = openSync(LOCK, "wx");
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return;
    } catch (err) {
      if (err.code !== "EEXIST") throw err;
    }
    // A builder that died left its lock behind: take it over.
    if (!alive(lockHolder())) {
      rmSync(LOCK, { force: true });
      continue;
    }
    if (Date.now() > deadline) throw new Error(`another process has been building dist/ for ${LOCK_WAIT_MS / 1000} s (${LOCK})`);
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, LOCK_POLL_MS);
  }
}

function lockHolder() {
  try {
    return Number(readFileSync(LOCK, "utf8"));
  } catch {
    return 0;
  }
}

function alive(pid) {
  // A lock file whose pid is not written yet (0) belongs to a process that has just created it.
  if (!pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === "EPERM";
  }
}
