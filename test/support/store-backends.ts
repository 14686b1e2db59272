// The two SessionStore backends the contract tests run on, from the same test files:
// `describe.each(storeBackends)`. Each test starts on an empty database: a SQLite file in a temp
// folder, removed afterwards; or on PostgreSQL, the test file's own schema on the run's server
// (created and migrated once per file, emptied after each test, dropped by the global teardown).
import { join } from "node:path";
import { openStore, type SessionStore, type StoreConfig, type StoreOptions } from "../../src/state/index.js";
import { emptySchema, testDatabaseUrl, uniqueSchema } from "./postgres.js";
import { makeTempDir } from "./tmp.js";

export type BackendName = "sqlite" | "postgres";

export interface TestStore {
  backend: BackendName;
  /** What openStore needs to reach this database: another process opens the same one with it. */
  config: StoreConfig;
  /** Another store object on the same database (each has its own connection or pool). */
  open(options?: StoreOptions): Promise<SessionStore>;
  /** Close every store opened here and remove the database. */
  cleanup(): Promise<void>;
}

export interface StoreBackend {
  name: BackendName;
  create(label?: string): TestStore;
}

function testStore(backend: BackendName, config: StoreConfig, removeData: (used: boolean) => Promise<void> | void): TestStore {
  const opened: SessionStore[] = [];
  let used = false;
  return {
    backend,
    config,
    async open(options) {
      used = true;
      const store = await openStore(config, options);
      opened.push(store);
      return store;
    },
    async cleanup() {
      for (const store of opened.splice(0)) await store.close().catch(() => undefined);
      await removeData(used);
    },
  };
}

export const sqliteBackend: StoreBackend = {
  name: "sqlite",
  create(label = "sb-store") {
    const temp = makeTempDir(label);
    const config = { databaseUrl: null, databaseSchema: "", dbPath: join(temp.dir, "nested", "state.db") };
    return testStore("sqlite", config, () => temp.cleanup());
  },
};

/**
 * Creating and migrating a schema costs far more than emptying one, so a test file keeps one
 * (module state is per test file). Tests of migrations themselves use a fresh `uniqueSchema()`.
 */
let fileSchema: string | null = null;

export const postgresBackend: StoreBackend = {
  name: "postgres",
  create(label = "store") {
    const url = testDatabaseUrl();
    fileSchema ??= uniqueSchema(label);
    const schema = fileSchema;
    const config = { databaseUrl: url, databaseSchema: schema, dbPath: "" };
    return testStore("postgres", config, async (used) => {
      if (used) await emptySchema(url, schema);
    });
  },
};

export const storeBackends: StoreBackend[] = [sqliteBackend, postgresBackend];
