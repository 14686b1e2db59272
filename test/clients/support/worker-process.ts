// A turn worker in its own OS process (`switchboard worker`), started from the source with tsx.
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const READY_LINE = "switchboard worker running";

export interface WorkerProcess {
  readonly pid: number;
  readonly child: ChildProcess;
  /** SIGTERM by pid, SIGKILL if it has not exited after `graceMs`. */
  stop(graceMs?: number): Promise<void>;
}

export async function spawnWorker(env: Record<string, string>, readyTimeoutMs = 30_000): Promise<WorkerProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", "src/main/cli.ts", "worker"], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`worker not ready after ${readyTimeoutMs} ms:\n${output}`)), readyTimeoutMs);
    const onData = (chunk: Buffer): void => {
      output += chunk.toString();
      if (output.includes(READY_LINE)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`worker exited with ${code} before it was ready:\n${output}`));
    });
  });
  const pid = child.pid;
  if (pid === undefined) throw new Error("worker has no pid");
  return {
    pid,
    child,
    async stop(graceMs = 10_000) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      process.kill(pid, "SIGTERM");
      const timer = setTimeout(() => {
        if (child.exitCode === null && child.signalCode === null) process.kill(pid, "SIGKILL");
      }, graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}
