// switchboard serve [--no-workers] | switchboard worker | switchboard migrate-store …
import type { Logger } from "pino";
import { adapterEnabled } from "../adapters/config-sections.js";
import { OPEN_TO_ANYONE } from "../gateway/access.js";
import { ConfigError, loadConfig, type GatewayConfig } from "./config.js";
import { RedisBinaryMissingError } from "../bus/embedded-redis.js";
import { createLogger } from "../gateway/logger.js";
import { startGateway, VERSION } from "./server.js";
import { startThreadedGateway } from "./threaded-serve.js";
import { benchWithout } from "../shared/bench-without.js";

/** The help text. It ends with migrate-store's and pairing's, whose modules (the pg client with the first) only those commands and this text load. */
async function usage(): Promise<string> {
  const { MIGRATE_STORE_USAGE } = await import("./migrate-store-command.js");
  const { PAIRING_USAGE } = await import("./pairing-command.js");
  return `switchboard ${VERSION}

Usage:
  switchboard serve [--no-workers]   HTTP + WebSocket ingress and workers (default; the workers
                                     in a thread of their own, or inline with WORKERS_LAYOUT=inline)
  switchboard worker                 workers only
  switchboard migrate-store …        copy an SQLite store into PostgreSQL (see below)
  switchboard pairing …              approve strangers when ACCESS_MODE=pairing (see below)
  switchboard --help

Configuration: environment variables (see README) and an optional YAML file in SWITCHBOARD_CONFIG.

${MIGRATE_STORE_USAGE}

${PAIRING_USAGE}`;
}

/** A command that reads the configuration: a bad one is a usage error (2) with the key named. */
async function runCommandWithConfig(run: () => Promise<number>): Promise<number> {
  try {
    return await run();
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    console.error(`configuration error: ${err.message}`);
    return 2;
  }
}

/** A platform anyone can message, with no access policy: every stranger's message costs model calls. */
function warnIfOpenToAnyone(config: GatewayConfig, logger: Logger): void {
  if (config.access.mode !== "open") return;
  const open = OPEN_TO_ANYONE.filter((platform) => adapterEnabled[platform as keyof typeof adapterEnabled]?.(config));
  if (open.length === 0) return;
  logger.warn({ platforms: open }, "ACCESS_MODE is open: anyone who finds the bot on these platforms can talk to it (set ACCESS_MODE=allowlist or pairing)");
}

export async function main(argv: string[]): Promise<number> {
  const [command = "serve", ...flags] = argv;
  if (command === "--help" || command === "-h" || command === "help") {
    console.log(await usage());
    return 0;
  }
  if (command === "migrate-store") return (await import("./migrate-store-command.js")).runMigrateStore(flags, process.env);
  if (command === "pairing") return runCommandWithConfig(() => import("./pairing-command.js").then((m) => m.runPairing(flags, process.env)));
  if (command !== "serve" && command !== "worker") {
    console.error(`unknown command: ${command}\n\n${await usage()}`);
    return 2;
  }
  const unknown = flags.filter((f) => f !== "--no-workers");
  if (unknown.length || (command === "worker" && flags.length)) {
    console.error(`unknown option: ${unknown.join(" ") || flags.join(" ")}\n\n${await usage()}`);
    return 2;
  }
  let config;
  try {
    config = loadConfig(process.env);
    benchWithout();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(`configuration error: ${err.message}`);
      return 2;
    }
    throw err;
  }
  const logger = createLogger(config.logLevel);
  warnIfOpenToAnyone(config, logger);
  const http = command === "serve";
  const workers = command === "worker" || !flags.includes("--no-workers");
  let gateway: { url: string | null; stop(): Promise<void> };
  try {
    if (http && workers && config.workersLayout === "thread") {
      const threaded = await startThreadedGateway(config, logger);
      gateway = { url: threaded.gateway.url, stop: () => threaded.stop() };
      // A recovery drill: the workers thread is cut off as if it crashed, then restarted.
      process.on("SIGUSR2", () => threaded.workers.crash());
    } else {
      gateway = await startGateway(config, { http, workers, logger });
    }
  } catch (err) {
    if (err instanceof RedisBinaryMissingError) {
      logger.fatal(err.message);
      return 1;
    }
    logger.fatal({ err: (err as Error).message }, "gateway failed to start");
    return 1;
  }
  if (gateway.url) console.log(`switchboard listening on ${gateway.url}`);
  else console.log("switchboard worker running");
  return new Promise<number>((resolve) => {
    let stopping = false;
    const stop = (signal: string): void => {
      if (stopping) return;
      stopping = true;
      logger.info({ signal }, "shutting down");
      const force = setTimeout(() => {
        logger.error("shutdown deadline passed; exiting");
        resolve(1);
      }, config.shutdownTimeoutMs + 10_000);
      force.unref();
      gateway
        .stop()
        .then(() => resolve(0))
        .catch((err: Error) => {
          logger.error({ err: err.message }, "shutdown failed");
          resolve(1);
        });
    };
    // Listen for good, not once: a launcher (npm, tsx) relays the signal its process group already
    // got, and a second SIGTERM without a listener would kill the process mid-shutdown. Repeats
    // are ignored; the deadline above bounds a shutdown that hangs.
    process.on("SIGTERM", () => stop("SIGTERM"));
    process.on("SIGINT", () => stop("SIGINT"));
  });
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: Error) => {
    console.error(err);
    process.exit(1);
  },
);
