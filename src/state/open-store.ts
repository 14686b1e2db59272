// The one place that chooses the backend: DATABASE_URL set -> PostgreSQL (several machines),
// unset -> the embedded SQLite file. The PostgreSQL store (and the pg client) is loaded only when
// chosen: a process on SQLite does not hold it in memory.
import { describeDatabase } from "./postgres/describe.js";
import { SessionDB } from "./session-db.js";
import type { OnTightened } from "./private-files.js";
import type { StoreOptions } from "./store-options.js";
import type { SessionStore } from "./types.js";

export interface StoreConfig {
  /** postgres://… selects PostgreSQL; null keeps SQLite at `dbPath`. */
  databaseUrl: string | null;
  /** PostgreSQL schema holding the tables (created if missing). */
  databaseSchema: string;
  /** The SQLite file, used only without `databaseUrl`. */
  dbPath: string;
  /** PostgreSQL only: connections in the store's pool (default DEFAULT_POOL_SIZE; its leases' pool has half, at least 2). */
  databasePoolSize?: number;
}

export interface OpenStoreOptions extends StoreOptions {
  /** SQLite only: checkpoint the WAL from a worker thread every this many ms (see wal-checkpointer.ts). */
  backgroundCheckpointMs?: number;
  /** SQLite only: another thread of this process checkpoints the file (SessionDBOptions). */
  checkpointedElsewhere?: boolean;
  /** SQLite only: told when the database files' permissions were tightened. */
  onModeTightened?: OnTightened;
}

export function isPostgresUrl(url: string): boolean {
  return /^postgres(ql)?:\/\//i.test(url);
}

/** Open (and migrate) the store the config names. */
export async function openStore(config: StoreConfig, options: OpenStoreOptions = {}): Promise<SessionStore> {
  if (config.databaseUrl) {
    if (!isPostgresUrl(config.databaseUrl)) throw new RangeError("DATABASE_URL: must be a postgres:// or postgresql:// URL");
    const { backgroundCheckpointMs: _checkpoints, checkpointedElsewhere: _elsewhere, onModeTightened: _fileModes, ...common } = options;
    const { PostgresStore } = await import("./postgres/postgres-store.js");
    return PostgresStore.open({ ...common, connectionString: config.databaseUrl, schema: config.databaseSchema, maxConnections: config.databasePoolSize });
  }
  return new SessionDB(config.dbPath, options);
}

/** Where the store lives, for logs: never the password. */
export function describeStore(config: StoreConfig): string {
  return config.databaseUrl ? describeDatabase(config.databaseUrl, config.databaseSchema) : `sqlite:${config.dbPath}`;
}
