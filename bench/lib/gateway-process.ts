// Runs `switchboard serve|worker` as its own OS process, the way a user starts it, so the
// figures include the real start-up wiring and the process's memory is its own.
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";

const CLI = join(import.meta.dirname, "..", "..", "src", "gateway", "cli.ts");

export interface GatewayProcess {
  child: ChildProcess;
  pid: number;
  /** http://host:port for `serve`, null for `worker`. */
  url: string | null;
  output(): string;
  stop(): Promise<void>;
}

export async function startGatewayProcess(args: string[], env: Record<string, string>, timeoutMs = 60_000): Promise<GatewayProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", CLI, ...args], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  const keep = (chunk: Buffer): void => {
    out += chunk.toString();
    if (out.length > 200_000) out = out.slice(-100_000);
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const url = await new Promise<string | null>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`switchboard ${args.join(" ")} did not start within ${timeoutMs} ms:\n${out}`)), timeoutMs);
    const onData = (): void => {
      const listening = /switchboard listening on (\S+)/.exec(out);
      if (listening) finish(listening[1]);
      else if (out.includes("switchboard worker running")) finish(null);
    };
    const finish = (value: string | null): void => {
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
    url,
    output: () => out,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

export const BENCH_API_KEY = "bench-api-key";

/** Environment for a gateway of this run: its own database, queue prefix and quiet logs. */
export function gatewayEnv(dir: string, redisUrl: string, prefix: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    SWITCHBOARD_DATA_DIR: dir,
    SWITCHBOARD_DB: join(dir, "switchboard.db"),
    REDIS_URL: redisUrl,
    SWITCHBOARD_QUEUE_PREFIX: prefix,
    SWITCHBOARD_API_KEY: BENCH_API_KEY,
    LOG_LEVEL: "warn",
    HOST: "127.0.0.1",
    PORT: "0",
    // The offline echo model and no platforms, whatever the caller's environment says.
    SWITCHBOARD_CONFIG: "",
    LLM_BASE_URL: "",
    LLM_MODEL: "",
    ECHO_CHUNK_DELAY_MS: "0",
    SLACK_SIGNING_SECRET: "",
    SLACK_BOT_TOKEN: "",
    DISCORD_BOT_TOKEN: "",
    DISCORD_PUBLIC_KEY: "",
    ...extra,
  };
}
