// Group commit at ingress: messages accepted together share one transaction and one enqueue
// round trip, and each still gets its own answer only once its own row is durable. On both
// store backends, with the real Redis queues.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DEFAULT_FLUSH_AFTER_MS } from "../../src/gateway/group-commit.js";
import { turnJobId } from "../../src/gateway/queues.js";
import type { AcceptResult } from "../../src/gateway/types.js";
import type { InboxInsert } from "../../src/state/types.js";
import { startTestGateway, type TestGateway } from "../support/gateway.js";
import { inbound } from "../support/messages.js";
import { dropSchema, testDatabaseUrl, uniqueSchema } from "../support/postgres.js";
import { countTransactions, type TransactionCounter } from "../support/transaction-counter.js";

type Accepted = Extract<AcceptResult, { status: "accepted" }>;

function accepted(result: AcceptResult): Accepted {
  if (result.status !== "accepted") throw new Error(`not accepted: ${JSON.stringify(result)}`);
  return result;
}

describe.each(["sqlite", "postgres"] as const)("group commit at ingress on %s", (backend) => {
  let gw: TestGateway;
  let transactions: TransactionCounter;
  let schema: string | null = null;

  beforeEach(async () => {
    // Before the store opens: SQLite builds its transaction functions when it is constructed.
    transactions = countTransactions();
    schema = backend === "postgres" ? uniqueSchema("group_commit") : null;
    const env: Record<string, string> = schema ? { DATABASE_URL: testDatabaseUrl(), DATABASE_SCHEMA: schema } : {};
    gw = await startTestGateway({ http: false, workers: false, env });
    // The session exists before the measured burst (its creation is a transaction of its own).
    accepted(await gw.gateway.ingress.accept(inbound("burst", "first")));
    // A running gateway's pool has its connections open; a new one would spread the burst's reads out.
    await Promise.all(Array.from({ length: 16 }, () => gw.gateway.store.getSession("warm")));
    transactions.reset();
  }, 60_000);

  afterEach(async () => {
    transactions.stop();
    await gw?.stop();
    if (schema) await dropSchema(testDatabaseUrl(), schema);
  });

  it("concurrent accepts share one transaction; each is acknowledged with its own durable row and job, a duplicate with its original", async () => {
    const { ingress, store, queues } = gw.gateway;
    const messages = Array.from({ length: 12 }, (_, i) => inbound("burst", `m${i}`));
    const burst = [...messages.slice(0, 6), { ...messages[2] }, ...messages.slice(6)];
    const started = performance.now();
    const accepting = burst.map((message) => ingress.accept(message));
    // A pass longer than the flush delay (this thread descheduled meanwhile) sends its batch early.
    const passMs = performance.now() - started;
    const results = await Promise.all(accepting);

    if (backend === "sqlite") {
      if (passMs < DEFAULT_FLUSH_AFTER_MS) expect(transactions.count).toBe(1);
      else expect(transactions.count).toBeLessThanOrEqual(1 + Math.floor(passMs / DEFAULT_FLUSH_AFTER_MS));
    }
    // PostgreSQL answers the reads before the insert one by one (and in any order); a batch waits
    // for them briefly, so a burst still takes far fewer transactions than messages.
    else expect(transactions.count).toBeLessThan(burst.length / 2);
    // The message and its redelivery: whichever was recorded first is accepted, the other is its duplicate.
    const pair = [results[2], results[6]];
    const original = accepted(pair.find((result) => result.status === "accepted") ?? pair[0]);
    expect(pair.find((result) => result !== original)).toEqual({ status: "duplicate", inboxId: original.inboxId, sessionId: original.sessionId });
    const fresh = results.map((result, index) => (index === 2 || index === 6 ? original : accepted(result))).filter((_, index) => index !== 6);
    expect(fresh.every((result) => result.enqueued)).toBe(true);
    const ids = fresh.map((result) => result.inboxId);
    expect(new Set(ids).size).toBe(12);
    // In call order (on PostgreSQL the reads before the insert may finish in any order).
    if (backend === "sqlite") expect(ids).toEqual([...ids].sort((a, b) => a - b));
    for (const [index, result] of fresh.entries()) {
      const row = await store.getInboxRow(result.inboxId);
      expect(row).toMatchObject({ status: "pending", platform_message_id: messages[index].platformMessageId });
      expect(await queues.turns.getJob(turnJobId(result.inboxId))).toBeTruthy();
    }
  }, 30_000);

  it("an enqueue failure leaves the batch's rows pending for the reconciler, each still acknowledged", async () => {
    const { ingress, store, queues } = gw.gateway;
    const turns = queues.turns as unknown as Record<"add" | "addBulk", unknown>;
    const saved = { add: turns.add, addBulk: turns.addBulk };
    const redisDown = (): Promise<never> => Promise.reject(new Error("Connection is closed."));
    turns.add = redisDown;
    turns.addBulk = redisDown;
    try {
      const results = (await Promise.all(Array.from({ length: 5 }, (_, i) => ingress.accept(inbound("burst", `down ${i}`))))).map(accepted);
      expect(results.map((result) => result.enqueued)).toEqual([false, false, false, false, false]);
      const pending = new Set((await store.listPendingInbox()).map((row) => row.id));
      for (const result of results) expect(pending.has(result.inboxId)).toBe(true);
    } finally {
      Object.assign(turns, saved);
    }
  }, 30_000);

  it("a batch that fails is recorded row by row: only the bad row fails", async () => {
    const { ingress, store } = gw.gateway;
    const bad = inbound("burst", "the bad one");
    const original = { batch: store.recordInboundBatch, one: store.recordInbound };
    // As a database refuses a row: the batch holding it fails whole, the row alone fails alone.
    const refuses = (insert: InboxInsert): boolean => insert.platformMessageId === bad.platformMessageId;
    store.recordInboundBatch = (inserts: readonly InboxInsert[]) =>
      inserts.some(refuses) ? Promise.reject(new Error("row refused")) : original.batch.call(store, inserts);
    store.recordInbound = (insert: InboxInsert) =>
      refuses(insert) ? Promise.reject(new Error("row refused")) : original.one.call(store, insert);
    try {
      const burst = [inbound("burst", "a"), bad, inbound("burst", "b")];
      const settled = await Promise.allSettled(burst.map((message) => ingress.accept(message)));
      expect(settled.map((s) => s.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
      if (settled[1].status === "rejected") expect(String(settled[1].reason)).toContain("row refused");
      const ids = settled.flatMap((s) => (s.status === "fulfilled" ? [accepted(s.value).inboxId] : []));
      expect(ids).toHaveLength(2);
      if (backend === "sqlite") expect(ids[1]).toBeGreaterThan(ids[0]);
      for (const id of ids) expect((await store.getInboxRow(id))?.status).toBe("pending");
      expect(await store.findInboxRow("test", bad.platformMessageId)).toBeNull();
    } finally {
      store.recordInboundBatch = original.batch;
      store.recordInbound = original.one;
    }
  }, 30_000);
});
