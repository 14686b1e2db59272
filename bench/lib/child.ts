// Bench helpers that run in their own OS process (workers, WebSocket clients), talking to the
// runner over the IPC channel with small typed messages.
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";

export const CHILDREN_DIR = join(import.meta.dirname, "..", "children");

export interface BenchChild<In, Out> {
  process: ChildProcess;
  pid: number;
  send(message: In): void;
  /** Resolve with the first message that matches. */
  next<T extends Out>(match: (message: Out) => message is T, timeoutMs?: number): Promise<T>;
  on(listener: (message: Out) => void): () => void;
  exited: Promise<number | null>;
  stop(): Promise<void>;
}

/** Messages kept for a later next() while nothing listens; older ones are dropped past this. */
const MAX_UNHEARD = 100;

export function spawnChild<In, Out>(script: string, args: string[] = [], env: Record<string, string> = {}): BenchChild<In, Out> {
  const child = spawn(process.execPath, ["--import", "tsx", join(CHILDREN_DIR, script), ...args], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const listeners = new Set<(message: Out) => void>();
  // Messages that came while nothing listened (a child ready while the runner still awaited
  // something else): next() looks there first, or a child's `ready` would be lost and awaited in vain.
  const unheard: Out[] = [];
  child.on("message", (message) => {
    if (listeners.size === 0) {
      if (unheard.length >= MAX_UNHEARD) unheard.shift();
      unheard.push(message as Out);
      return;
    }
    for (const listener of [...listeners]) listener(message as Out);
  });
  return {
    process: child,
    pid: child.pid as number,
    exited,
    send(message) {
      child.send(message as object);
    },
    on(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    next<T extends Out>(match: (message: Out) => message is T, timeoutMs = 120_000): Promise<T> {
      const failed = unheard.find((message) => childError(message) !== null);
      if (failed !== undefined) return Promise.reject(new Error(`${script}: ${childError(failed)}`));
      const index = unheard.findIndex(match);
      if (index >= 0) return Promise.resolve(unheard.splice(index, 1)[0] as T);
      return new Promise<T>((resolve, reject) => {
        const timer = setTimeout(() => {
          off();
          reject(new Error(`${script}: no matching message within ${timeoutMs} ms`));
        }, timeoutMs);
        const onExit = (code: number | null): void => {
          off();
          reject(new Error(`${script} exited with ${code} before the expected message`));
        };
        const listener = (message: Out): void => {
          const failure = childError(message);
          if (failure !== null) {
            off();
            reject(new Error(`${script}: ${failure}`));
            return;
          }
          if (!match(message)) return;
          off();
          resolve(message);
        };
        const off = (): void => {
          clearTimeout(timer);
          listeners.delete(listener);
          child.off("exit", onExit);
        };
        listeners.add(listener);
        child.once("exit", onExit);
      });
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** A child reports a failure as `{type: "error", message}`: it rejects whatever the runner awaits. */
function childError(message: unknown): string | null {
  if (typeof message !== "object" || message === null) return null;
  const m = message as { type?: unknown; message?: unknown };
  return m.type === "error" ? String(m.message) : null;
}

/** In a child: send a message to the runner. */
export function toParent<Out>(message: Out): void {
  process.send?.(message as object);
}

/** In a child: listen to the runner. */
export function fromParent<In>(listener: (message: In) => void): void {
  process.on("message", (message) => listener(message as In));
}
