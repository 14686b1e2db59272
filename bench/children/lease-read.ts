// The reload benchmark's timing of a turn's lease transaction on SQLite: how long its BEGIN
// IMMEDIATE ... COMMIT (the write lock every other writer, the HTTP thread's acks among them,
// waits for) lasts when the turn reads a long transcript, on a newly opened store (the first turn
// of the conversation in a process) and again on the same store (a later turn). better-sqlite3's
// transaction functions are wrapped to time their IMMEDIATE runs before the store builds its own.
// argv: dbPath sessionId rounds
import Database from "better-sqlite3";
import { toParent } from "../lib/child.js";

export type LeaseReadMessage = { type: "done"; firstTurnMs: number[]; laterTurnMs: number[] } | { type: "error"; message: string };

type Variadic = (this: unknown, ...args: unknown[]) => unknown;

const [dbPath, sessionId, roundsArg] = process.argv.slice(2);
const immediateMs: number[] = [];
const databaseProto = Database.prototype as unknown as { transaction: (this: Database.Database, fn: Variadic) => Variadic & Record<string, Variadic> };
const originalTransaction = databaseProto.transaction;
databaseProto.transaction = function (this: Database.Database, fn: Variadic) {
  const transaction = originalTransaction.call(this, fn);
  const timed = function (this: unknown, ...args: unknown[]) {
    return transaction.apply(this, args);
  } as Variadic & Record<string, Variadic>;
  for (const mode of ["deferred", "exclusive"]) Object.defineProperty(timed, mode, { value: transaction[mode] });
  Object.defineProperty(timed, "immediate", {
    value: function (this: unknown, ...args: unknown[]) {
      const started = performance.now();
      try {
        return transaction.immediate.apply(this, args);
      } finally {
        immediateMs.push(performance.now() - started);
      }
    },
  });
  return timed;
};

try {
  const { openStore } = await import("../../src/state/index.js");
  const firstTurnMs: number[] = [];
  const laterTurnMs: number[] = [];
  for (let round = 0; round < Number(roundsArg); round++) {
    const store = await openStore({ databaseUrl: null, databaseSchema: "", dbPath });
    for (const times of [firstTurnMs, laterTurnMs]) {
      const holder = `bench-${round}-${times.length}`;
      immediateMs.length = 0;
      if (!(await store.acquireSessionTurnLease(sessionId, holder, { readUnderLease: { sessionId, onRead: () => undefined } }))) throw new Error("lease not taken");
      times.push(immediateMs.at(-1) ?? NaN);
      await store.releaseSessionTurnLease(sessionId, holder);
    }
    await store.close();
  }
  toParent<LeaseReadMessage>({ type: "done", firstTurnMs, laterTurnMs });
} catch (err) {
  toParent<LeaseReadMessage>({ type: "error", message: (err as Error).message });
}
