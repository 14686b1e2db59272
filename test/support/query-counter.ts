// Counts the statements this process sends to PostgreSQL (a wrapper on pg's Client.query), the
// round trips they cost and the commits among them, each under the store call that sent it. A
// round trip starts with a statement sent on a connection that waits for no answer; statements
// sent while earlier ones are unanswered ride along (pg pipelines them on the store's pools). A
// commit is a COMMIT, or a write statement outside a transaction (it commits by itself). Stages
// are exact while one message runs at a time: statements a store batches with other callers'
// (shared-trips.ts) count under the caller that opened the batch.
import { AsyncLocalStorage } from "node:async_hooks";
import pg from "pg";
import { PostgresStore } from "../../src/state/index.js";

type Variadic = (this: unknown, ...args: unknown[]) => unknown;

export interface StageCounts {
  statements: number;
  roundTrips: number;
  commits: number;
}

export interface QueryCounter {
  /** Counts by the outermost store method that sent them ("(none)" for statements outside one). */
  byStage(): Record<string, StageCounts>;
  /** Every statement's text in order, with its stage (to read what a path sends). */
  log(): Array<{ stage: string; text: string; newTrip: boolean }>;
  reset(): void;
  stop(): void;
}

const WRITE = /^\s*(WITH\b[\s\S]*\b(INSERT|UPDATE|DELETE)\b|INSERT|UPDATE|DELETE|SELECT\s+\w+\s*\()/i;

function textOf(config: unknown): string {
  if (typeof config === "string") return config;
  if (config && typeof config === "object" && "text" in config && typeof config.text === "string") return config.text;
  return "";
}

/** Wrap pg.Client.prototype.query and every PostgresStore method (for the stage). `stop()` undoes both. */
export function countQueries(): QueryCounter {
  const stage = new AsyncLocalStorage<string>();
  const counts = new Map<string, StageCounts>();
  let entries: Array<{ stage: string; text: string; newTrip: boolean }> = [];
  const inFlight = new WeakMap<object, number>();
  const inTransaction = new WeakMap<object, boolean>();

  const clientProto = pg.Client.prototype as unknown as { query: Variadic };
  const originalQuery = clientProto.query;
  clientProto.query = function (this: unknown, ...args: unknown[]) {
    const client = this as object;
    const text = textOf(args[0]);
    const name = stage.getStore() ?? "(none)";
    const pending = inFlight.get(client) ?? 0;
    const newTrip = pending === 0;
    const entry = counts.get(name) ?? { statements: 0, roundTrips: 0, commits: 0 };
    entry.statements += 1;
    if (newTrip) entry.roundTrips += 1;
    if (/^\s*BEGIN\b/i.test(text)) inTransaction.set(client, true);
    else if (/^\s*(COMMIT|ROLLBACK)\b/i.test(text)) {
      if (/^\s*COMMIT/i.test(text)) entry.commits += 1;
      inTransaction.set(client, false);
    } else if (!inTransaction.get(client) && WRITE.test(text) && !/^\s*SELECT\s+(pg_advisory|set_config)/i.test(text)) entry.commits += 1;
    counts.set(name, entry);
    entries.push({ stage: name, text: text.replace(/\s+/g, " ").trim().slice(0, 100), newTrip });
    inFlight.set(client, pending + 1);
    const settle = (): void => void inFlight.set(client, (inFlight.get(client) ?? 1) - 1);
    // pg.Pool's own query() passes a callback; a statement awaited by the store returns a promise.
    const callback = args.at(-1);
    if (typeof callback === "function") {
      args[args.length - 1] = (...answer: unknown[]) => {
        settle();
        return (callback as Variadic).apply(this, answer);
      };
      return originalQuery.apply(this, args);
    }
    const result = originalQuery.apply(this, args);
    if (result instanceof Promise) result.then(settle, settle);
    else settle();
    return result;
  };

  const storeProto = PostgresStore.prototype as unknown as Record<string, unknown>;
  const originals = new Map<string, Variadic>();
  for (const key of Object.getOwnPropertyNames(PostgresStore.prototype)) {
    const method = storeProto[key];
    if (key === "constructor" || typeof method !== "function") continue;
    originals.set(key, method as Variadic);
    storeProto[key] = function (this: unknown, ...args: unknown[]) {
      if (stage.getStore() !== undefined) return (method as Variadic).apply(this, args);
      return stage.run(key, () => (method as Variadic).apply(this, args));
    };
  }

  return {
    byStage: () => Object.fromEntries([...counts].map(([name, c]) => [name, { ...c }])),
    log: () => [...entries],
    reset() {
      counts.clear();
      entries = [];
    },
    stop() {
      clientProto.query = originalQuery;
      for (const [key, method] of originals) storeProto[key] = method;
    },
  };
}
