// What the counting preload (instrument-preload.ts) counts in one thread of the server process,
// and the arithmetic the runner does on it: a window is `after - before` per thread, the process
// is the sum of its threads.
import { addCounts, diffCounts, type CommandCounts } from "./redis-commands.js";

export interface Counters {
  sqlite: {
    /** db.transaction(...) calls outside a transaction: one BEGIN ... COMMIT each. */
    transactions: number;
    /** Writing statements run outside a transaction: SQLite commits each on its own. */
    autocommitWrites: number;
    /** Reading statements run outside a transaction (a read transaction each, no commit). */
    autocommitReads: number;
    /** Every statement run, inside a transaction or not (BEGIN, COMMIT and savepoints left out). */
    statements: number;
    /** The single-statement writes and reads by their SQL (shortened). */
    autocommitSql: CommandCounts;
    /** Every statement by its SQL (shortened), inside a transaction or not. */
    statementSql: CommandCounts;
  };
  /** Commands sent by this thread's Redis clients, by name (scripts as `evalsha <script>`). */
  redis: CommandCounts;
}

/** One thread's counts, as the main thread reports them. */
export interface ThreadCounters {
  threadId: number;
  counters: Counters;
}

export interface ProcessCounters {
  threads: ThreadCounters[];
  /** Threads that said they count but did not answer in time (a dead thread): left out. */
  unanswered: number[];
}

export function emptyCounters(): Counters {
  return { sqlite: { transactions: 0, autocommitWrites: 0, autocommitReads: 0, statements: 0, autocommitSql: {}, statementSql: {} }, redis: {} };
}

export function diffCounters(before: Counters, after: Counters): Counters {
  return {
    sqlite: {
      transactions: after.sqlite.transactions - before.sqlite.transactions,
      autocommitWrites: after.sqlite.autocommitWrites - before.sqlite.autocommitWrites,
      autocommitReads: after.sqlite.autocommitReads - before.sqlite.autocommitReads,
      statements: after.sqlite.statements - before.sqlite.statements,
      autocommitSql: diffCounts(before.sqlite.autocommitSql, after.sqlite.autocommitSql),
      statementSql: diffCounts(before.sqlite.statementSql, after.sqlite.statementSql),
    },
    redis: diffCounts(before.redis, after.redis),
  };
}

export function sumCounters(all: Counters[]): Counters {
  const sum = emptyCounters();
  for (const c of all) {
    sum.sqlite.transactions += c.sqlite.transactions;
    sum.sqlite.autocommitWrites += c.sqlite.autocommitWrites;
    sum.sqlite.autocommitReads += c.sqlite.autocommitReads;
    sum.sqlite.statements += c.sqlite.statements;
    addCounts(sum.sqlite.autocommitSql, c.sqlite.autocommitSql);
    addCounts(sum.sqlite.statementSql, c.sqlite.statementSql);
    addCounts(sum.redis, c.redis);
  }
  return sum;
}

/** Each thread's counts over a window; a thread started within it counts from zero. */
export function windowByThread(before: ProcessCounters, after: ProcessCounters): ThreadCounters[] {
  const start = new Map(before.threads.map((t) => [t.threadId, t.counters]));
  return after.threads.map((t) => ({ threadId: t.threadId, counters: diffCounters(start.get(t.threadId) ?? emptyCounters(), t.counters) }));
}
