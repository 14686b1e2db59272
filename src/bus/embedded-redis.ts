// A private redis-server, started when REDIS_URL is unset: unix socket under the data folder,
// nothing persisted, stopped on exit, a stale one from a crashed run cleaned on the next start.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { Redis } from "ioredis";

export interface EmbeddedRedis {
  url: string;
  socketPath: string;
  pid: number;
  stop(): Promise<void>;
}

export class RedisBinaryMissingError extends Error {
  constructor(binary: string) {
    super(
      `redis-server not found (${binary}). Install it (Debian/Ubuntu: apt-get install redis-server; ` +
        `macOS: brew install redis) or set REDIS_URL to a running Redis.`,
    );
    this.name = "RedisBinaryMissingError";
  }
}

function findRedisBinary(explicit?: string): string {
  const candidates = explicit
    ? [explicit]
    : [process.env.REDIS_SERVER_BIN, "redis-server", "/usr/bin/redis-server", "/usr/local/bin/redis-server"].filter((c): c is string => Boolean(c));
  for (const candidate of candidates) {
    const probe = spawnSync(candidate, ["--version"], { stdio: "ignore" });
    if (probe.status === 0) return candidate;
  }
  throw new RedisBinaryMissingError(explicit ?? "redis-server");
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

async function waitForPing(socketPath: string, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`redis-server exited with code ${child.exitCode}`);
    if (existsSync(socketPath)) {
      const client = new Redis({ path: socketPath, lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false });
      try {
        await client.connect();
        if ((await client.ping()) === "PONG") return;
      } catch (err) {
        lastError = err;
      } finally {
        client.disconnect();
      }
    }
    await sleep(25);
  }
  throw new Error(`redis-server did not answer within ${timeoutMs} ms: ${String(lastError ?? "no socket")}`);
}

/** Start a private redis-server with its socket and pid file under `dir`. */
export async function startEmbeddedRedis(dir: string, options: { binary?: string; timeoutMs?: number } = {}): Promise<EmbeddedRedis> {
  const folder = resolve(dir);
  mkdirSync(folder, { recursive: true, mode: 0o700 });
  const socketPath = join(folder, "redis.sock");
  const pidFile = join(folder, "redis.pid");
  const ownerFile = join(folder, "owner.pid");
  // Another live gateway owns this folder's server: never take it away from it.
  const owner = existsSync(ownerFile) ? Number(readFileSync(ownerFile, "utf8").trim()) : 0;
  if (owner > 0 && owner !== process.pid && isAlive(owner) && existsSync(pidFile)) {
    throw new Error(`the private redis-server in ${folder} belongs to a running gateway (pid ${owner}); stop it first, or use another data folder (SWITCHBOARD_DATA_DIR)`);
  }
  // A stale server from a crashed run: stop it only if the pid file names a live redis-server we started.
  if (existsSync(pidFile)) {
    const stalePid = Number(readFileSync(pidFile, "utf8").trim());
    if (stalePid > 0 && isAlive(stalePid) && isOurRedis(stalePid, socketPath)) {
      process.kill(stalePid, "SIGTERM");
      for (let i = 0; i < 100 && isAlive(stalePid); i++) await sleep(20);
    }
    rmSync(pidFile, { force: true });
  }
  rmSync(socketPath, { force: true });
  const binary = findRedisBinary(options.binary);
  // Its own process group: a Ctrl-C or a service manager's SIGTERM to the gateway's group must not
  // stop Redis under the gateway's graceful shutdown; stop() (or the exit handler) ends it.
  const child = spawn(
    binary,
    ["--port", "0", "--unixsocket", socketPath, "--unixsocketperm", "700", "--save", "", "--appendonly", "no", "--dir", folder, "--loglevel", "warning"],
    { stdio: ["ignore", "ignore", "pipe"], detached: true },
  );
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  if (child.pid === undefined) throw new Error("redis-server failed to start");
  const pid = child.pid;
  writeFileSync(pidFile, String(pid));
  writeFileSync(ownerFile, String(process.pid));
  try {
    await waitForPing(socketPath, child, options.timeoutMs ?? 10_000);
  } catch (err) {
    child.kill("SIGKILL");
    rmSync(pidFile, { force: true });
    throw new Error(`${(err as Error).message}${stderr ? `: ${stderr.trim()}` : ""}`, { cause: err });
  }
  const exitHandler = (): void => {
    if (child.exitCode === null) child.kill("SIGTERM");
  };
  process.once("exit", exitHandler);
  return {
    url: `unix://${socketPath}`,
    socketPath,
    pid,
    async stop() {
      process.removeListener("exit", exitHandler);
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise<void>((done) => child.once("exit", () => done()));
        child.kill("SIGTERM");
        await Promise.race([exited, sleep(5_000)]);
        if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      }
      rmSync(pidFile, { force: true });
      rmSync(ownerFile, { force: true });
      rmSync(socketPath, { force: true });
    },
  };
}

/** Both must hold: a redis-server, and the one serving this folder's socket (not any other). */
function isOurRedis(pid: number, socketPath: string): boolean {
  try {
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8");
    return cmdline.includes("redis-server") && cmdline.includes(socketPath);
  } catch {
    // No /proc (macOS): trust the pid file only if the socket is there too.
    return existsSync(socketPath);
  }
}
