// Counts the transactions this test process begins, on both backends: better-sqlite3's
// db.transaction(...) calls outside a transaction (one BEGIN ... COMMIT each; patched before a
// store is opened, since a store builds its transaction functions when constructed), the BEGINs
// pg clients send and their write statements sent outside BEGIN (each a transaction of its own).
// `stop()` puts the originals back.
import Database from "better-sqlite3";
import pg from "pg";

type Variadic = (this: unknown, ...args: unknown[]) => unknown;

export interface TransactionCounter {
  readonly count: number;
  reset(): void;
  stop(): void;
}

/**
 * Call `onBegin` each time a better-sqlite3 transaction function (or its deferred, immediate or
 * exclusive variant) runs outside a transaction: one BEGIN ... COMMIT. Affects stores opened
 * afterwards (a store builds its transaction functions when constructed). Returns the undo.
 */
export function onSqliteTransactions(onBegin: () => void): () => void {
  const databaseProto = Database.prototype as unknown as { transaction: (this: Database.Database, fn: Variadic) => Variadic & Record<string, Variadic> };
  const originalTransaction = databaseProto.transaction;
  databaseProto.transaction = function (this: Database.Database, fn: Variadic) {
    const transaction = originalTransaction.call(this, fn);
    const db = transaction.database as unknown as Database.Database;
    const counted = (variant: Variadic): Variadic =>
      function (this: unknown, ...args: unknown[]) {
        if (!db.inTransaction) onBegin();
        return variant.apply(this, args);
      };
    const wrapped = counted(transaction) as Variadic & Record<string, Variadic>;
    for (const mode of ["deferred", "immediate", "exclusive"]) Object.defineProperty(wrapped, mode, { value: counted(transaction[mode]) });
    Object.defineProperty(wrapped, "default", { value: wrapped });
    Object.defineProperty(wrapped, "database", { value: db });
    return wrapped;
  };
  return () => {
    databaseProto.transaction = originalTransaction;
  };
}

/** A statement that writes: INSERT, UPDATE or DELETE, alone or in a CTE (not SELECT ... FOR UPDATE). */
const WRITES = /\b(INSERT\s+INTO|DELETE\s+FROM|UPDATE\s+\w+(\s+(AS\s+)?\w+)?\s+SET)\b/i;

function statementText(config: unknown): string {
  if (typeof config === "string") return config;
  const text = (config as { text?: unknown } | null)?.text;
  return typeof text === "string" ? text : "";
}

export function countTransactions(): TransactionCounter {
  let count = 0;
  const restoreSqlite = onSqliteTransactions(() => (count += 1));
  const clientProto = pg.Client.prototype as unknown as { query: Variadic };
  const originalQuery = clientProto.query;
  // On PostgreSQL a write statement sent outside BEGIN ... COMMIT is a transaction of its own.
  const inExplicit = new WeakMap<object, boolean>();
  clientProto.query = function (this: unknown, ...args: unknown[]) {
    const text = statementText(args[0]);
    const client = this as object;
    if (/^\s*BEGIN\b/i.test(text)) {
      count += 1;
      inExplicit.set(client, true);
    } else if (/^\s*(COMMIT|ROLLBACK|END)\b/i.test(text)) inExplicit.set(client, false);
    else if (!inExplicit.get(client) && WRITES.test(text)) count += 1;
    return originalQuery.apply(this, args);
  };
  return {
    get count() {
      return count;
    },
    reset() {
      count = 0;
    },
    stop() {
      restoreSqlite();
      clientProto.query = originalQuery;
    },
  };
}
