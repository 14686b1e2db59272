// The PostgreSQL connection pool of one store: every connection resolves tables in the store's
// schema, BIGINT ids come back as numbers, and a broken idle connection is dropped instead of
// crashing the process. Also the transaction helper and the database clock as SQL.
import pg from "pg";

export { describeDatabase } from "./describe.js";

export type Queryable = pg.Pool | pg.PoolClient;

export const DEFAULT_SCHEMA = "switchboard";

/** A plain identifier: quoting never has to escape anything, and search_path takes it as is. */
const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

export function checkSchemaName(schema: string): string {
  if (!SCHEMA_NAME.test(schema)) {
    throw new RangeError(`DATABASE_SCHEMA: "${schema}" is not a plain identifier (letters, digits and '_', at most 63, not starting with a digit)`);
  }
  return schema;
}

/** The schema as a quoted identifier (case kept). */
export function quoteSchema(schema: string): string {
  return `"${checkSchemaName(schema)}"`;
}

/** Ids are BIGINT; as numbers they stay exact up to 2^53, far beyond any row count here. */
const typeParsers: pg.CustomTypesConfig = {
  getTypeParser: (oid, format) => (oid === pg.types.builtins.INT8 ? (value: string) => Number(value) : pg.types.getTypeParser(oid, format)),
};

export interface PoolSettings {
  connectionString: string;
  schema: string;
  maxConnections: number;
  /** How long a statement may wait for a row or advisory lock before failing with 55P03 (contention). */
  lockTimeoutMs: number;
  /**
   * Commit without waiting for the WAL flush (`synchronous_commit = off`). Only for the lease's own
   * statements: see `PostgresStore`'s lease pool for why that is safe there and nowhere else.
   */
  asyncCommit?: boolean;
}

/** The server ends a session left idle inside a transaction this long (a paused or cut-off node), freeing its locks. */
const IDLE_IN_TRANSACTION_TIMEOUT_MS = 30_000;
/** Opening a connection fails after this long instead of hanging on an unreachable host. */
const CONNECT_TIMEOUT_MS = 10_000;

export function createPool(settings: PoolSettings): pg.Pool {
  const setUp = [`SET search_path TO ${quoteSchema(settings.schema)}`, ...(settings.asyncCommit ? ["SET synchronous_commit TO off"] : [])].join("; ");
  const pool = new pg.Pool({
    connectionString: settings.connectionString,
    max: settings.maxConnections,
    types: typeParsers,
    application_name: "switchboard",
    // No wait on a lock is endless: a lease waiter blocked behind a stuck transaction sees
    // contention and keeps trying (like SQLITE_BUSY), and a stuck transaction is ended by the server.
    lock_timeout: settings.lockTimeoutMs,
    idle_in_transaction_session_timeout: IDLE_IN_TRANSACTION_TIMEOUT_MS,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    keepAlive: true,
    // Statements issued without waiting for each other's answers go out at once and are answered
    // in order: statements that need nothing from each other cost one round trip instead of one
    // each (sendTogether).
    pipeline: true,
    // Awaited before a new connection serves its first query. (Not the start-up `options`: an
    // `options` parameter in DATABASE_URL would replace it.)
    onConnect: async (client) => {
      await client.query(setUp);
    },
  });
  // A connection that breaks while idle (server restart, network cut) is removed from the pool;
  // the next query opens a new one. Without a listener the error would end the process.
  pool.on("error", () => undefined);
  return pool;
}

/** Run `work` in one transaction on one connection: COMMIT when it resolves, ROLLBACK when it throws. */
export async function inTransaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query("BEGIN");
    const result = await work(client);
    await client.query("COMMIT");
    return result;
  } catch (err) {
    broken = await rollBack(client);
    throw err;
  } finally {
    client.release(broken);
  }
}

/** After a failure: end whatever transaction is open; the error when the connection cannot (then it is destroyed, not pooled). */
async function rollBack(client: pg.PoolClient): Promise<Error | undefined> {
  try {
    // Outside a transaction (a pipelined COMMIT already rolled it back) this is only a warning.
    await client.query("ROLLBACK");
    return undefined;
  } catch (rollbackError) {
    return rollbackError as Error;
  }
}

/**
 * Run `issue`, which starts several statements on `client` without awaiting between them, with
 * the connection's socket corked: they leave in one write instead of one each. On this kind of
 * machine a socket write to the database costs more CPU than the statement's own work.
 */
export function sendTogether<T>(client: pg.PoolClient, issue: () => T): T {
  // Pool clients are pg.Client instances; PoolClient's type does not show the connection.
  const socket = (client as unknown as pg.Client).connection.stream;
  socket.cork();
  try {
    return issue();
  } finally {
    socket.uncork();
  }
}

/**
 * Await statements issued together: every one is settled (none is left to fail unhandled), then
 * the first failure in issue order is thrown (the later ones in an aborted transaction only say so).
 */
export async function allInOrder<T extends readonly unknown[]>(pending: { readonly [K in keyof T]: Promise<T[K]> }): Promise<T> {
  const settled = await Promise.allSettled(pending);
  for (const outcome of settled) if (outcome.status === "rejected") throw outcome.reason;
  return settled.map((outcome) => (outcome as PromiseFulfilledResult<unknown>).value) as unknown as T;
}

/** Names of the statements prepared so far, by their text (every connection prepares a name once). */
const statementNames = new Map<string, string>();

/**
 * A statement the server parses and plans once per connection and afterwards only executes: a
 * turn's statements run thousands of times on the same few connections, and an unnamed one is
 * parsed and planned again at every run. Texts here are the modules' constants, so the names stay few.
 */
export function prepared(text: string, values: unknown[]): { name: string; text: string; values: unknown[] } {
  let name = statementNames.get(text);
  if (name === undefined) {
    name = `switchboard_${statementNames.size + 1}`;
    statementNames.set(text, name);
  }
  return { name, text, values };
}

/**
 * The database's clock in epoch seconds, or the store's test clock when `$n` is not null. In a
 * transaction `now()` is its start, so every row of one flush gets the same time (as in SQLite).
 */
export function clockSql(parameter: number): string {
  return `COALESCE($${parameter}::float8, extract(epoch FROM now())::float8)`;
}

/** SQLSTATE classes that mean "not now" rather than "wrong": connection trouble, lock/serialisation conflicts, overload, restarts. */
const TRANSIENT_SQLSTATE = /^(08|40|53|57P0[123]|55P03)/;
const TRANSIENT_NODE_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EAI_AGAIN"]);

/** The database is unreachable or busy right now (a lease waiter keeps trying; no holder is known). */
export function isTransientPgError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === "string") return TRANSIENT_SQLSTATE.test(code) || TRANSIENT_NODE_CODES.has(code);
  // pg's own connection errors carry no code.
  return /Connection terminated|timeout exceeded when trying to connect/i.test(err.message);
}

