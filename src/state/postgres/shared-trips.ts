// Statements of different callers that leave in one socket write. On a machine where the database
// runs beside the gateway, a round trip's cost is mostly its syscalls and the wake-up of the
// server process it writes to, not the statements: a turn's flush or lease step sent on a
// connection of its own costs a write (and a backend's wake-up) each. Here the statements asked
// for during one pass of the event loop go out together on one connection of the pool, pipelined:
// one write, one wake-up, answers in order.
//
// - "pipeline": each statement is its own transaction, as if sent alone (the lease's statements,
//   committed without waiting for the disk).
// - "transaction": each caller sends exactly one statement, and a batch of several runs as one
//   transaction (BEGIN, the statements, COMMIT): one commit, so one wait for the WAL flush, for
//   all of them. When a statement fails, the server rolls the whole transaction back, and each
//   statement runs again alone, so a caller gets its own statement's outcome and nobody else's.
import type pg from "pg";
import { sendTogether } from "./connection.js";

type Mode = "pipeline" | "transaction";

interface Queued {
  issue: (client: pg.PoolClient) => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

export class SharedTrips {
  private queued: Queued[] = [];

  constructor(
    private readonly pool: pg.Pool,
    private readonly mode: Mode,
  ) {}

  /**
   * Run `issue` on a connection shared with this pass's other callers; its first statements leave
   * with theirs. In "transaction" mode `issue` must send exactly one statement and return its answer.
   */
  run<T>(issue: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queued.push({ issue, resolve: resolve as (value: unknown) => void, reject });
      if (this.queued.length === 1) setImmediate(() => void this.runQueued());
    });
  }

  private async runQueued(): Promise<void> {
    const batch = this.queued;
    this.queued = [];
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (err) {
      for (const item of batch) item.reject(err);
      return;
    }
    try {
      if (this.mode === "transaction" && batch.length > 1) await this.inOneTransaction(client, batch);
      else await this.pipelined(client, batch);
    } finally {
      client.release();
    }
  }

  /** Each statement its own transaction; every caller settled with its own outcome. */
  private async pipelined(client: pg.PoolClient, batch: readonly Queued[]): Promise<void> {
    const outcomes = await Promise.allSettled(sendTogether(client, () => batch.map((item) => item.issue(client))));
    outcomes.forEach((outcome, i) => (outcome.status === "fulfilled" ? batch[i].resolve(outcome.value) : batch[i].reject(outcome.reason)));
  }

  private async inOneTransaction(client: pg.PoolClient, batch: readonly Queued[]): Promise<void> {
    const sent = sendTogether(client, () => ({
      begin: client.query("BEGIN"),
      issued: batch.map((item) => item.issue(client)),
      commit: client.query("COMMIT"),
    }));
    const [begin, commit, ...outcomes] = await Promise.allSettled([sent.begin, sent.commit, ...sent.issued]);
    const settleEach = (): void => outcomes.forEach((outcome, i) => (outcome.status === "fulfilled" ? batch[i].resolve(outcome.value) : batch[i].reject(outcome.reason)));
    // Without BEGIN each statement ran as a transaction of its own: its outcome is its caller's.
    if (begin.status === "rejected") return settleEach();
    // COMMIT unanswered (the connection broke): whether it committed is unknown, so nothing runs again.
    if (commit.status === "rejected") {
      for (const item of batch) item.reject(commit.reason);
      return;
    }
    // COMMIT answered: every statement committed, or one failed and the server rolled them all back.
    if (outcomes.every((outcome) => outcome.status === "fulfilled")) return settleEach();
    await this.pipelined(client, batch);
  }
}
