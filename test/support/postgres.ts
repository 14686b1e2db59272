// PostgreSQL for tests: the run's server (TEST_DATABASE_URL or DATABASE_URL, else a private one the
// global setup starts with initdb + pg_ctl on a unix socket), a schema per test named after the
// run, and dropping them again.
import { spawn, spawnSync, type SpawnOptions } from "node:child_process";
import { randomUUID } from "node:crypto";
import { chownSync, existsSync, readdirSync, readFileSync } from "node:fs";
import { delimiter, join } from "node:path";
import pg from "pg";
import { describeDatabase } from "../../src/state/postgres/connection.js";
import { formatConnectionUrl } from "../../src/state/postgres/connection-url.js";

/** The run's server; the global setup sets it (and removes DATABASE_URL, so gateways default to SQLite). */
export function testDatabaseUrl(): string {
  const url = process.env.TEST_DATABASE_URL;
  if (!url) throw new Error("TEST_DATABASE_URL is not set: the vitest global setup provides it");
  return url;
}

/** Every schema of this test run starts with this, so the teardown finds what a crashed test left. */
export function runSchemaPrefix(run = process.env.SWITCHBOARD_TEST_RUN ?? "local"): string {
  return `sbtest_${run.toLowerCase().replace(/[^a-z0-9]/g, "")}_`;
}

/** A schema name no other test or run uses. */
export function uniqueSchema(label = "t"): string {
  const safeLabel = label.toLowerCase().replace(/[^a-z0-9]/g, "_").slice(0, 24);
  return `${runSchemaPrefix()}${safeLabel}_${randomUUID().replace(/-/g, "").slice(0, 8)}`;
}

async function withClient<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

export async function dropSchema(url: string, schema: string): Promise<void> {
  await withClient(url, (client) => client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`));
}

/** One small pool per test process for emptying schemas: a new connection per test would cost more than the test. */
let maintenance: { url: string; pool: pg.Pool } | null = null;

function maintenancePool(url: string): pg.Pool {
  if (maintenance?.url !== url) {
    // Idle connections do not keep the test process alive.
    maintenance = { url, pool: new pg.Pool({ connectionString: url, max: 1, allowExitOnIdle: true }) };
    maintenance.pool.on("error", () => undefined);
  }
  return maintenance.pool;
}

/** Delete every row of a store's tables (identity counters keep counting). */
export async function emptySchema(url: string, schema: string): Promise<void> {
  const tables = ["attachments", "deliveries", "inbox", "messages", "pairings", "session_turn_leases", "sessions", "turn_usage"];
  await maintenancePool(url).query(tables.map((table) => `DELETE FROM "${schema}".${table};`).join(" "));
}

/** Drop every schema this run created (tests drop their own; this catches the ones a failure left). */
export async function dropRunSchemas(url: string, prefix = runSchemaPrefix()): Promise<void> {
  await withClient(url, async (client) => {
    const { rows } = await client.query<{ nspname: string }>("SELECT nspname FROM pg_namespace WHERE starts_with(nspname, $1)", [prefix]);
    for (const { nspname } of rows) await client.query(`DROP SCHEMA IF EXISTS "${nspname}" CASCADE`);
  });
}

/** Fails with the fix in the message when the server does not answer. */
export async function checkPostgres(url: string, source: string): Promise<void> {
  try {
    await withClient(url, (client) => client.query("SELECT 1"));
  } catch (err) {
    throw new Error(
      `${source} (${describeDatabase(url)}) does not answer: ${(err as Error).message}. ` +
        `Start that PostgreSQL server, or unset ${source} to let the test run start a private one (needs initdb and pg_ctl).`,
      { cause: err },
    );
  }
}

export class PostgresUnavailableError extends Error {
  constructor() {
    super(
      "The PostgreSQL tests need a server, and none was found: set TEST_DATABASE_URL=postgres://user@host:5432/database " +
        "to use a running one, or install PostgreSQL's server binaries (initdb, pg_ctl) so the test run starts a private one " +
        "(Debian/Ubuntu: apt-get install postgresql; macOS: brew install postgresql).",
    );
    this.name = "PostgresUnavailableError";
  }
}

/** The folder holding initdb and pg_ctl: on PATH, else where Debian keeps them (/usr/lib/postgresql/<version>/bin). */
export function findPostgresBinaries(): string | null {
  const hasBoth = (dir: string): boolean => existsSync(join(dir, "initdb")) && existsSync(join(dir, "pg_ctl"));
  for (const dir of (process.env.PATH ?? "").split(delimiter)) if (dir && hasBoth(dir)) return dir;
  const debianRoot = "/usr/lib/postgresql";
  if (existsSync(debianRoot)) {
    const versions = readdirSync(debianRoot)
      .filter((name) => /^\d+(\.\d+)?$/.test(name))
      .sort((a, b) => Number(b) - Number(a));
    for (const version of versions) {
      const dir = join(debianRoot, version, "bin");
      if (hasBoth(dir)) return dir;
    }
  }
  return null;
}

/**
 * PostgreSQL refuses to run as root: as root, run the server as the `postgres` user Debian's
 * package creates (or `nobody`), owning its folder.
 */
function serverUser(): { uid: number; gid: number } | null {
  if (process.getuid?.() !== 0) return null;
  for (const name of ["postgres", "nobody"]) {
    const entry = spawnSync("getent", ["passwd", name], { encoding: "utf8" });
    const fields = entry.status === 0 ? entry.stdout.trim().split(":") : [];
    if (fields.length >= 4) return { uid: Number(fields[2]), gid: Number(fields[3]) };
  }
  throw new Error("running as root, and neither a 'postgres' nor a 'nobody' user exists to run the private PostgreSQL server as");
}

function run(binary: string, args: string[], options: SpawnOptions): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(binary, args, { ...options, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.once("error", reject);
    child.once("close", (code) => (code === 0 ? resolve() : reject(new Error(`${binary} ${args.join(" ")} exited with ${code}:\n${output}`))));
  });
}

export interface PrivatePostgres {
  url: string;
  stop(): Promise<void>;
}

/**
 * A throwaway server in `folder`: no TCP port (a unix socket in the folder), no fsync. Only the
 * server started here is ever stopped.
 */
export async function startPrivatePostgres(folder: string): Promise<PrivatePostgres> {
  const binDir = findPostgresBinaries();
  if (!binDir) throw new PostgresUnavailableError();
  const user = serverUser();
  if (user) chownSync(folder, user.uid, user.gid);
  const spawnOptions: SpawnOptions = { cwd: folder, env: process.env, ...(user ?? {}) };
  const dataDir = join(folder, "data");
  await run(join(binDir, "initdb"), ["-D", dataDir, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync"], spawnOptions);
  const serverOptions = `-k ${folder} -c listen_addresses='' -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300`;
  const logFile = join(folder, "postgres.log");
  try {
    await run(join(binDir, "pg_ctl"), ["-D", dataDir, "-l", logFile, "-w", "-t", "60", "-o", serverOptions, "start"], spawnOptions);
  } catch (err) {
    const log = existsSync(logFile) ? readFileSync(logFile, "utf8") : "";
    throw new Error(`${(err as Error).message}\n${log}`, { cause: err });
  }
  return {
    // The socket folder and the user as parameters: a valid URL for pg and for `new URL` alike.
    url: formatConnectionUrl({ user: "postgres", password: "", host: folder, port: "", database: "postgres", params: new URLSearchParams() }),
    stop: () => run(join(binDir, "pg_ctl"), ["-D", dataDir, "-m", "immediate", "-w", "stop"], spawnOptions),
  };
}
