// Start gateways for tests: in this process (startGateway) or as real OS processes (the CLI).
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pino } from "pino";
import { loadConfig, type GatewayConfig } from "../../src/main/config.js";
import { startGateway, type GatewayHandle, type GatewayOptions } from "../../src/main/server.js";
import { makeTempDir } from "./tmp.js";
import { testRedisUrl, uniquePrefix } from "./redis.js";

export interface TestGateway {
  gateway: GatewayHandle;
  dir: string;
  env: Record<string, string>;
  stop(): Promise<void>;
}

/** Environment a gateway process of this test uses: same DB, same Redis, same queue prefix. */
export function testGatewayEnv(dir: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    SWITCHBOARD_DATA_DIR: dir,
    SWITCHBOARD_DB: join(dir, "switchboard.db"),
    REDIS_URL: testRedisUrl(),
    SWITCHBOARD_QUEUE_PREFIX: uniquePrefix("gw"),
    LOG_LEVEL: "warn",
    PORT: "0",
    ...extra,
  };
}

export async function startTestGateway(
  options: Partial<GatewayOptions> & { env?: Record<string, string>; overrides?: Partial<GatewayConfig> } = {},
): Promise<TestGateway> {
  const temp = makeTempDir("sb-gw");
  const env = testGatewayEnv(temp.dir, options.env);
  const config = loadConfig(env, options.overrides);
  const gateway = await startGateway(config, {
    http: options.http ?? true,
    workers: options.workers ?? true,
    provider: options.provider,
    ...(options.inProcessWakeUps === undefined ? {} : { inProcessWakeUps: options.inProcessWakeUps }),
    ...(options.platformAttemptLimits === undefined ? {} : { platformAttemptLimits: options.platformAttemptLimits }),
    ...(options.unverifiedBudgetBytes === undefined ? {} : { unverifiedBudgetBytes: options.unverifiedBudgetBytes }),
    logger: options.logger ?? pino({ level: env.LOG_LEVEL ?? "warn" }),
  });
  return {
    gateway,
    dir: temp.dir,
    env,
    async stop() {
      await gateway.stop();
      temp.cleanup();
    },
  };
}

export interface GatewayProcess {
  child: ChildProcess;
  pid: number;
  output: () => string;
  /** For `serve`: the URL it printed; null for `worker`. */
  url: string | null;
  /** Send `signal` (SIGKILL after `killAfterMs` if it is still running) and wait for the exit code. */
  stop(signal?: NodeJS.Signals, killAfterMs?: number): Promise<number | null>;
  exited: Promise<number | null>;
}

const ROOT = join(import.meta.dirname, "..", "..");
const CLI = join(ROOT, "src", "main", "cli.ts");

/**
 * How `npm start` runs the gateway, from package.json's start script (`node [node flags]
 * <entry> serve`): the benchmarks measure exactly that. Throws when the script has another shape.
 */
export function startScriptCommand(): { nodeArgs: string[]; entry: string } {
  const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> };
  const words = pkg.scripts.start.trim().split(/\s+/);
  const entry = words.at(-2);
  if (words[0] !== "node" || words.at(-1) !== "serve" || !entry?.endsWith(".js")) throw new Error(`package.json's start script is not \`node [flags] <entry>.js serve\`: ${pkg.scripts.start}`);
  return { nodeArgs: words.slice(1, -2), entry: join(ROOT, entry) };
}

/**
 * Run `switchboard <args>` as its own OS process, the way a user starts it (tests and benchmarks
 * share this). Resolves once it printed its ready line. By default the TypeScript sources run
 * through tsx; `runFrom: "start-script"` runs what `npm start` runs (the compiled build, see
 * bin/switchboard.js). `nodeArgs` go to node itself (a benchmark's profiler flags).
 */
export async function spawnGatewayProcess(
  args: string[],
  env: Record<string, string>,
  timeoutMs = 30_000,
  options: { hostname?: string; nodeArgs?: string[]; prefix?: string[]; runFrom?: "sources" | "start-script" } = {},
): Promise<GatewayProcess> {
  const extra = options.nodeArgs ?? [];
  const start = options.runFrom === "start-script" ? startScriptCommand() : null;
  const node = start
    ? [process.execPath, ...start.nodeArgs, ...extra, start.entry, ...args]
    : [process.execPath, "--import", "tsx", ...extra, CLI, ...args];
  // Another host name: a UTS namespace of its own (unshare execs in place, so the pid is node's).
  // `prefix` runs before it (e.g. `ip netns exec <name>`, which also execs in place).
  const hostPrefix = options.hostname ? otherHostPrefix(options.hostname) : [];
  const [command, ...commandArgs] = [...(options.prefix ?? []), ...hostPrefix, ...node];
  const child = spawn(command, commandArgs, {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  const keep = (chunk: Buffer): void => {
    out += chunk.toString();
    // A long-running process keeps only its latest output.
    if (out.length > 200_000) out = out.slice(-100_000);
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  // "close" comes after "exit" once the output pipes are drained, so `output()` is complete by then.
  const exited = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)));
  const url = await new Promise<string | null>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`switchboard ${args.join(" ")} did not start within ${timeoutMs} ms:\n${out}`)), timeoutMs);
    const onData = (): void => {
      const listening = /switchboard listening on (\S+)/.exec(out);
      if (listening) done(listening[1]);
      else if (out.includes("switchboard worker running")) done(null);
    };
    const done = (value: string | null): void => {
      clearTimeout(timer);
      child.stdout?.off("data", onData);
      resolve(value);
    };
    child.stdout?.on("data", onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`switchboard ${args.join(" ")} exited with ${code}:\n${out}`));
    });
  });
  return {
    child,
    pid: child.pid as number,
    output: () => out,
    url,
    exited,
    async stop(signal: NodeJS.Signals = "SIGTERM", killAfterMs = 20_000) {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill(signal);
      const timer = setTimeout(() => child.kill("SIGKILL"), killAfterMs);
      try {
        return await exited;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

/**
 * The command prefix that runs a program under another host name, as if on another machine (same
 * pid namespace, so a test can still kill it): `unshare --uts` as root, else in a user namespace.
 * Throws, with the fix, when neither works here.
 */
export function otherHostPrefix(hostname: string): string[] {
  const setName = ["sh", "-c", 'hostname "$0" && exec "$@"', hostname];
  for (const unshare of [["unshare", "--uts"], ["unshare", "--user", "--map-root-user", "--uts"]]) {
    const probe = spawnSync(unshare[0], [...unshare.slice(1), ...setName, "true"], { stdio: "ignore" });
    if (probe.status === 0) return [...unshare, ...setName];
  }
  throw new Error("running a process under another host name needs `unshare --uts` (util-linux): run the tests as root, or enable unprivileged user namespaces");
}

/** Poll until `fn` returns a truthy value, or fail after `timeoutMs`. */
export async function waitFor<T>(fn: () => Promise<T> | T, timeoutMs = 20_000, label = "condition", intervalMs = 50): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await fn();
      if (value) return value as NonNullable<T>;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${label}${last ? `: ${String(last)}` : ""}`);
}
