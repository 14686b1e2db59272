// Loaded with `node --require` (after tsx's require hook) into a server process the Slack
// benchmark profiles, never by the gateway itself: counts the SQLite transactions and statements
// the process runs (better-sqlite3) and the commands its Redis clients send (ioredis, scripts by
// name), and serves the counts on BENCH_COUNTERS_SOCKET, so the runner can read them before and
// after a window. Node runs `--require` preloads in every worker thread too (`--import` ones only
// in the main thread), and a thread has modules of its own: each thread counts its own.
import { createHash } from "node:crypto";
import Database from "better-sqlite3";
import { Redis } from "ioredis";
import { onSqliteTransactions } from "../../test/support/transaction-counter.js";
import { emptyCounters, type Counters } from "./process-counters.js";
import { shareCounters } from "./thread-counters.js";

type Variadic = (this: unknown, ...args: unknown[]) => unknown;

interface StatementLike {
  database: Database.Database;
  readonly: boolean;
  source: string;
}

/** better-sqlite3 runs a transaction's BEGIN, COMMIT and savepoints as statements too. */
const CONTROL = /^\s*(BEGIN|COMMIT|END|ROLLBACK|SAVEPOINT|RELEASE)\b/i;

type StatementKind = { control: true } | { control: false; sql: string };

function kindOf(statement: StatementLike): StatementKind {
  if (CONTROL.test(statement.source)) return { control: true };
  const sql = statement.source.replace(/\s+/g, " ").trim();
  return { control: false, sql: sql.length > 90 ? `${sql.slice(0, 87)}...` : sql };
}

interface CommandLike {
  name: string;
  args: unknown[];
}

function instrument(): Counters {
  const counters = emptyCounters();
  const kinds = new WeakMap<object, StatementKind>();

  // Statements: better-sqlite3's Statement class is only reachable through a statement.
  const probe = new Database(":memory:");
  const statementProto = Object.getPrototypeOf(probe.prepare("SELECT 1")) as Record<string, Variadic>;
  probe.close();
  for (const method of ["run", "get", "all", "iterate"]) {
    const original = statementProto[method];
    // The native statement's time shows as this wrapper's self time in a CPU profile.
    statementProto[method] = function (this: unknown, ...args: unknown[]) {
      const statement = this as StatementLike;
      let kind = kinds.get(statement);
      if (!kind) kinds.set(statement, (kind = kindOf(statement)));
      if (!kind.control) {
        counters.sqlite.statements += 1;
        counters.sqlite.statementSql[kind.sql] = (counters.sqlite.statementSql[kind.sql] ?? 0) + 1;
        if (!statement.database.inTransaction) {
          if (statement.readonly) counters.sqlite.autocommitReads += 1;
          else counters.sqlite.autocommitWrites += 1;
          const key = `${statement.readonly ? "read" : "write"}: ${kind.sql}`;
          counters.sqlite.autocommitSql[key] = (counters.sqlite.autocommitSql[key] ?? 0) + 1;
        }
      }
      return original.apply(this, args);
    };
  }

  // Transactions: db.transaction(fn) returns a function (with deferred/immediate/exclusive variants).
  onSqliteTransactions(() => (counters.sqlite.transactions += 1));

  // Redis: every command of every client goes through sendCommand; scripts are named by their sha.
  const sha1 = (text: string): string => createHash("sha1").update(text).digest("hex");
  const scripts = new Map<string, string>();
  const redisProto = Redis.prototype as unknown as {
    sendCommand: (this: Redis, command: CommandLike, ...rest: unknown[]) => unknown;
    defineCommand: (this: Redis, name: string, definition: { lua: string }) => void;
  };
  const originalDefine = redisProto.defineCommand;
  redisProto.defineCommand = function (this: Redis, name: string, definition: { lua: string }) {
    scripts.set(sha1(definition.lua), name);
    return originalDefine.call(this, name, definition);
  };
  const originalSend = redisProto.sendCommand;
  redisProto.sendCommand = function (this: Redis, command: CommandLike, ...rest: unknown[]) {
    let name = command.name;
    if (name === "evalsha" || name === "eval") {
      const first = String(command.args[0] ?? "");
      const sha = name === "evalsha" ? first : sha1(first);
      name = `${name} ${scripts.get(sha) ?? sha.slice(0, 8)}`;
    }
    counters.redis[name] = (counters.redis[name] ?? 0) + 1;
    return originalSend.call(this, command, ...rest);
  };

  return counters;
}

const socket = process.env.BENCH_COUNTERS_SOCKET;
if (socket) shareCounters(socket, instrument());
