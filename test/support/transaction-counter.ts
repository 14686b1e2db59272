// Counts the transactions this test process begins, on both backends: better-sqlite3's
// db.transaction(...) calls outside a transaction (one BEGIN ... COMMIT each; patched before a
// store is opened, since a store builds its transaction functions when constructed) and the
// BEGINs pg clients send. `stop()` puts the originals back.
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

export function countTransactions(): TransactionCounter {
  let count = 0;
  const restoreSqlite = onSqliteTransactions(() => (count += 1));
  const clientProto = pg.Client.prototype as unknown as { query: Variadic };
  const originalQuery = clientProto.query;
  clientProto.query = function (this: unknown, ...args: unknown[]) {
    if (typeof args[0] === "string" && /^\s*BEGIN\b/i.test(args[0])) count += 1;
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
