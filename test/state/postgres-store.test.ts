// What only the PostgreSQL backend has: its schema setting, migrations under an advisory lock, the
// database's clock, and a gateway that keeps nothing durable on its own disk. (Everything the two
// backends share runs on both from the other files in this folder.)
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  COMPRESSION_END_REASON,
  DEFAULT_POOL_SIZE,
  openStore,
  PostgresStore,
  TurnLeaseLostError,
  UnknownSessionError,
  type InboxInsert,
  type KeyedInboxInsert,
  type SessionStore,
  type TurnStartRead,
} from "../../src/state/index.js";
import { createPool, isTransientPgError } from "../../src/state/postgres/connection.js";
import { formatConnectionUrl, parseConnectionUrl } from "../../src/state/postgres/connection-url.js";
import { PgLeaseSql } from "../../src/state/postgres/lease.js";
import { SharedTrips } from "../../src/state/postgres/shared-trips.js";
import { LATEST_PG_SCHEMA_VERSION } from "../../src/state/postgres/migrations.js";
import { startTestGateway, type TestGateway } from "../support/gateway.js";
import { dropSchema, testDatabaseUrl, uniqueSchema } from "../support/postgres.js";
import { startRoundTripProxy, type RoundTripProxy } from "../support/round-trip-proxy.js";
import { until } from "./helpers.js";

const opened: PostgresStore[] = [];
const schemas: string[] = [];
let gateway: TestGateway | null = null;

afterEach(async () => {
  await gateway?.stop();
  gateway = null;
  for (const store of opened.splice(0)) await store.close();
  for (const schema of schemas.splice(0)) await dropSchema(testDatabaseUrl(), schema);
});

function freshSchema(label: string): string {
  const schema = uniqueSchema(label);
  schemas.push(schema);
  return schema;
}

async function open(schema: string, connectionString = testDatabaseUrl()): Promise<PostgresStore> {
  const store = await PostgresStore.open({ connectionString, schema });
  opened.push(store);
  return store;
}

async function query<T extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: testDatabaseUrl() });
  await client.connect();
  try {
    return (await client.query<T>(text, values)).rows;
  } finally {
    await client.end();
  }
}

async function tablesIn(schema: string): Promise<string[]> {
  const rows = await query<{ tablename: string }>("SELECT tablename FROM pg_tables WHERE schemaname = $1 ORDER BY tablename", [schema]);
  return rows.map((row) => row.tablename);
}

describe("the PostgreSQL schema", () => {
  it("is created when missing and migrated to the latest version, each step recorded once", async () => {
    const schema = freshSchema("migrate");
    await open(schema);
    expect(await tablesIn(schema)).toEqual(["attachments", "deliveries", "inbox", "messages", "pairings", "schema_migrations", "session_turn_leases", "sessions", "turn_usage"]);
    const versions = await query<{ version: number }>(`SELECT version FROM "${schema}".schema_migrations ORDER BY version`);
    expect(versions.map((row) => row.version)).toEqual(Array.from({ length: LATEST_PG_SCHEMA_VERSION }, (_, i) => i + 1));
  });

  it("indexes a conversation's pending inbox rows alone, also in a schema made before that index", async () => {
    const schema = freshSchema("pending-index");
    const first = await open(schema);
    await first.createSession("s", { source: "t" });
    const ids = [];
    for (const id of ["m1", "m2", "m3"]) ids.push((await first.recordInbound({ platform: "t", platformMessageId: id, sessionId: "s", payload: { text: id }, receivedAt: 1 })).row.id);
    await first.completeInbox([ids[0]], "done", "answered");
    await first.close();
    // As version 3 left it: every row's (session, status, id) in one index, no pairings or usage.
    await query(`DROP INDEX "${schema}".inbox_session_pending`);
    await query(`CREATE INDEX inbox_session_status ON "${schema}".inbox (session_id, status, id)`);
    await query(`DROP TABLE "${schema}".pairings`);
    await query(`DROP TABLE "${schema}".turn_usage`);
    await query(`DELETE FROM "${schema}".schema_migrations WHERE version >= 4`);
    const store = await open(schema);
    expect((await store.pendingInbox("s", 10)).map((row) => row.id)).toEqual([ids[1], ids[2]]);
    const indexes = await query<{ indexname: string; indexdef: string }>("SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = $1 AND tablename = 'inbox' ORDER BY indexname", [schema]);
    const bySession = indexes.filter((row) => row.indexdef.includes("(session_id"));
    expect(bySession.map((row) => row.indexname)).toEqual(["inbox_session_pending"]);
    expect(bySession[0].indexdef).toMatch(/WHERE \(status = 'pending'::text\)/);
  });

  it("nodes starting together on a new schema migrate it exactly once and all serve", async () => {
    const schema = freshSchema("together");
    const stores = await Promise.all(Array.from({ length: 5 }, () => open(schema)));
    const versions = await query<{ version: number }>(`SELECT version FROM "${schema}".schema_migrations`);
    expect(versions).toHaveLength(LATEST_PG_SCHEMA_VERSION);
    await stores[0].createSession("s", { source: "t" });
    await stores[4].appendMessage("s", { role: "user", content: "from the fifth node" });
    expect((await stores[2].getMessages("s")).map((m) => m.content)).toEqual(["from the fifth node"]);
  });

  it("keeps its data across restarts", async () => {
    const schema = freshSchema("reopen");
    const first = await open(schema);
    await first.createSession("s1", { source: "test" });
    await first.recordInbound({ platform: "slack", platformMessageId: "m1", sessionId: "s1", payload: { text: "x" } });
    await first.close();
    const second = await open(schema);
    expect(await second.getSession("s1")).not.toBeNull();
    expect((await second.recordInbound({ platform: "slack", platformMessageId: "m1", sessionId: "s1", payload: { text: "x" } })).inserted).toBe(false);
  });

  it("refuses a schema written by a newer build", async () => {
    const schema = freshSchema("newer");
    const store = await open(schema);
    await store.close();
    await query(`INSERT INTO "${schema}".schema_migrations (version, applied_at) VALUES ($1, 0)`, [LATEST_PG_SCHEMA_VERSION + 1]);
    await expect(PostgresStore.open({ connectionString: testDatabaseUrl(), schema })).rejects.toThrow(/newer than this build/);
  });

  it("deployments in different schemas of one server share nothing", async () => {
    const [a, b] = await Promise.all([open(freshSchema("deploy_a")), open(freshSchema("deploy_b"))]);
    for (const store of [a, b]) await store.createSession("same-id", { source: "t" });
    await a.appendMessage("same-id", { role: "user", content: "only in a" });
    expect(await b.getMessages("same-id")).toEqual([]);
    expect(await a.tryAcquireSessionTurnLease("same-id", "holder-a")).toBe(true);
    expect(await b.tryAcquireSessionTurnLease("same-id", "holder-b")).toBe(true);
    expect((await a.recordInbound({ platform: "slack", platformMessageId: "m", sessionId: "same-id", payload: {} })).inserted).toBe(true);
    expect((await b.recordInbound({ platform: "slack", platformMessageId: "m", sessionId: "same-id", payload: {} })).inserted).toBe(true);
  });

  it("stays in its schema even when DATABASE_URL passes its own `options` (a search_path among them)", async () => {
    const schema = freshSchema("options");
    const url = testDatabaseUrl();
    const withOptions = `${url}${url.includes("?") ? "&" : "?"}options=${encodeURIComponent("-c search_path=public")}`;
    const store = await open(schema, withOptions);
    await store.createSession("s", { source: "t" });
    expect(await query(`SELECT id FROM "${schema}".sessions`)).toEqual([{ id: "s" }]);
  });

  it("refuses a schema name that is not a plain identifier", async () => {
    await expect(PostgresStore.open({ connectionString: testDatabaseUrl(), schema: 'x"; DROP SCHEMA public; --' })).rejects.toThrow(/DATABASE_SCHEMA/);
  });
});

describe("the database's clock", () => {
  it("times are epoch seconds from the server, whatever this machine's clock says", async () => {
    const store = await open(freshSchema("clock"));
    const [{ now: before }] = await query<{ now: number }>("SELECT extract(epoch FROM now())::float8 AS now");
    // This machine's clock runs an hour behind while the holder acquires its lease.
    const realNow = Date.now.bind(Date);
    const skew = vi.spyOn(Date, "now").mockImplementation(() => realNow() - 3_600_000);
    try {
      await store.createSession("s", { source: "t" });
      expect(await store.tryAcquireSessionTurnLease("s", "pid=1:host=slow-clock:turn=a", { ttlSeconds: 60 })).toBe(true);
    } finally {
      skew.mockRestore();
    }
    const [{ now: after }] = await query<{ now: number }>("SELECT extract(epoch FROM now())::float8 AS now");
    const session = await store.getSession("s");
    const lease = await store.getSessionTurnLease("s");
    expect(typeof session?.started_at).toBe("number");
    expect(session?.started_at).toBeGreaterThanOrEqual(before);
    expect(session?.started_at).toBeLessThanOrEqual(after);
    expect(lease && lease.expires_at - lease.acquired_at).toBeCloseTo(60, 6);
    // So the lease is live for everyone, and no other holder gets it before the server's clock says so.
    expect(await store.tryAcquireSessionTurnLease("s", "pid=2:host=other:turn=b")).toBe(false);
  });
});

describe("a lease row locked by a stuck transaction (a node paused mid-flush)", () => {
  it("a waiter reports contention, not a holder, keeps trying, and is admitted once the lock goes; a fenced write fails instead of hanging", async () => {
    const schema = freshSchema("locked");
    const store = await PostgresStore.open({ connectionString: testDatabaseUrl(), schema, lockTimeoutMs: 100 });
    opened.push(store);
    await store.createSession("s", { source: "t" });
    expect(await store.tryAcquireSessionTurnLease("s", "A", { ttlSeconds: 60 })).toBe(true);
    const locker = new pg.Client({ connectionString: testDatabaseUrl() });
    await locker.connect();
    try {
      await locker.query("BEGIN");
      await locker.query(`SELECT 1 FROM "${schema}".session_turn_leases WHERE conversation_id = 's' FOR UPDATE`);

      await expect(store.appendMessagesBatch("s", [{ role: "user", content: "x" }], { turnLeaseHolder: "A" })).rejects.toMatchObject({ code: "55P03" });
      const onWait = vi.fn();
      const onContended = vi.fn();
      const waiting = store.acquireSessionTurnLease("s", "B", { waitSeconds: 20, onWait, onContended });
      await until(() => onContended.mock.calls.length >= 2, 10_000, "the waiter to report contention");
      expect(onWait).not.toHaveBeenCalled();

      // The stuck transaction ends, having let the lease go.
      await locker.query(`DELETE FROM "${schema}".session_turn_leases WHERE conversation_id = 's'`);
      await locker.query("COMMIT");
      expect(await waiting).toBe(true);
      expect((await store.getSessionTurnLease("s"))?.holder).toBe("B");
      expect(await store.getMessages("s")).toEqual([]);
    } finally {
      await locker.query("ROLLBACK").catch(() => undefined);
      await locker.end();
    }
  });
});

describe("contention", () => {
  it("counts connection loss, restarts, lock and serialisation conflicts as contention, and SQL errors as errors", () => {
    const withCode = (code: string): Error => Object.assign(new Error(code), { code });
    for (const code of ["08006", "08001", "40001", "40P01", "53300", "57P01", "57P03", "55P03", "ECONNREFUSED", "ECONNRESET"]) {
      expect(isTransientPgError(withCode(code)), code).toBe(true);
    }
    expect(isTransientPgError(new Error("Connection terminated unexpectedly"))).toBe(true);
    for (const code of ["23505", "23514", "42P01", "42601", "22P02"]) expect(isTransientPgError(withCode(code)), code).toBe(false);
    expect(isTransientPgError("not an error")).toBe(false);
  });
});

describe("openStore", () => {
  it("DATABASE_URL selects PostgreSQL; without it, SQLite", async () => {
    const schema = freshSchema("factory");
    const postgres = await openStore({ databaseUrl: testDatabaseUrl(), databaseSchema: schema, dbPath: "/nonexistent/never-created.db" });
    try {
      expect(postgres).toBeInstanceOf(PostgresStore);
      expect(existsSync("/nonexistent")).toBe(false);
    } finally {
      await postgres.close();
    }
    await expect(openStore({ databaseUrl: "mysql://nope", databaseSchema: "x", dbPath: "" })).rejects.toThrow(/DATABASE_URL/);
  });

  /** How many of `store`'s reads reach the server at once while another client holds the sessions table. */
  async function readsAtOnce(store: SessionStore, schema: string, reads: number): Promise<number> {
    const locker = new pg.Client({ connectionString: testDatabaseUrl() });
    await locker.connect();
    try {
      await locker.query("BEGIN");
      await locker.query(`LOCK TABLE ${schema}.sessions IN ACCESS EXCLUSIVE MODE`);
      const lockerPid = (await locker.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0].pid;
      const pending = Promise.all(Array.from({ length: reads }, (_, i) => store.getSession(`s${i}`)));
      const blocked = async (): Promise<number> =>
        (await query<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE $1 = ANY (pg_blocking_pids(pid))", [lockerPid]))[0].n;
      // Every read the pool lets through is soon waiting on the lock; the rest wait for a connection.
      const deadline = Date.now() + 5_000;
      while ((await blocked()) < 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      await new Promise((resolve) => setTimeout(resolve, 300));
      const atOnce = await blocked();
      await locker.query("COMMIT");
      expect(await pending).toEqual(Array.from({ length: reads }, () => null));
      return atOnce;
    } finally {
      await locker.end();
    }
  }

  it("opens at most DATABASE_POOL_SIZE connections for a store's work (10 unless set)", async () => {
    const schema = freshSchema("pool");
    const small = await openStore({ databaseUrl: testDatabaseUrl(), databaseSchema: schema, dbPath: "", databasePoolSize: 3 });
    try {
      expect(await readsAtOnce(small, schema, 8)).toBe(3);
    } finally {
      await small.close();
    }
    const standard = await openStore({ databaseUrl: testDatabaseUrl(), databaseSchema: schema, dbPath: "" });
    try {
      expect(await readsAtOnce(standard, schema, 12)).toBe(DEFAULT_POOL_SIZE);
    } finally {
      await standard.close();
    }
    await expect(openStore({ databaseUrl: testDatabaseUrl(), databaseSchema: schema, dbPath: "", databasePoolSize: 0 })).rejects.toThrow(/DATABASE_POOL_SIZE/);
  });
});

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" }).map((name) => join(dir, name));
}

describe("a gateway with DATABASE_URL", () => {
  it("answers through PostgreSQL and keeps no database file of its own", async () => {
    const schema = freshSchema("gateway");
    gateway = await startTestGateway({ env: { DATABASE_URL: testDatabaseUrl(), DATABASE_SCHEMA: schema } });
    const url = gateway.gateway.url ?? "";
    const health = (await (await fetch(`${url}/health`)).json()) as { db: string };
    expect(health.db).toBe("ok");

    const reply = await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "echo", messages: [{ role: "user", content: "hello through postgres" }] }),
    });
    expect(reply.status).toBe(200);
    const completion = (await reply.json()) as { choices: Array<{ message: { content: string } }> };
    expect(completion.choices[0].message.content).toContain("hello through postgres");

    // Another node reading the same schema sees the whole turn.
    const reader = await open(schema);
    const [session] = await reader.listSessions();
    const stored = (await reader.getMessages(session.id)).map((m) => [m.role, m.content]);
    expect(stored[0]).toEqual(["user", "hello through postgres"]);
    expect(stored.at(-1)?.[0]).toBe("assistant");
    expect(await reader.inboxCounts()).toMatchObject({ done: 1, pending: 0 });
    // Nothing durable on this machine: no SQLite file (nor its WAL) anywhere in the data folder.
    expect(existsSync(gateway.env.SWITCHBOARD_DB)).toBe(false);
    expect(filesUnder(gateway.dir).filter((file) => /\.db(-wal|-shm|-journal)?$/.test(file))).toEqual([]);
  });
});

describe("commit durability per pool", () => {
  it("the lease pool commits without waiting for the WAL flush; the pool of every other write keeps the server's setting", async () => {
    const schema = freshSchema("commit");
    await open(schema);
    // Without the test run's own `options` (it turns synchronous commit off for speed).
    const connectionString = testDatabaseUrl().replace(/([?&])options=[^&]*&?/, "$1").replace(/[?&]$/, "");
    const settings = { connectionString, schema, maxConnections: 1, lockTimeoutMs: 1_000 };
    const leasePool = createPool({ ...settings, asyncCommit: true });
    const writePool = createPool(settings);
    const serverDefault = new pg.Pool({ connectionString, max: 1 });
    try {
      const show = async (pool: pg.Pool): Promise<string> => (await pool.query<{ synchronous_commit: string }>("SHOW synchronous_commit")).rows[0].synchronous_commit;
      expect(await show(leasePool)).toBe("off");
      expect(await show(writePool)).toBe(await show(serverDefault));
    } finally {
      await Promise.all([leasePool.end(), writePool.end(), serverDefault.end()]);
    }
  });
});

/**
 * A message row inserted in a transaction left open on a connection of its own: its id is drawn
 * now, before rows inserted later, and it becomes visible only at commit().
 */
async function insertLate(schema: string, row: { role: string; content: string }): Promise<{ commit: () => Promise<void>; end: () => Promise<void> }> {
  const late = new pg.Client({ connectionString: testDatabaseUrl() });
  await late.connect();
  await late.query("BEGIN");
  await late.query(`INSERT INTO "${schema}".messages (session_id, role, content, timestamp) VALUES ('s', $1, $2, 1)`, [row.role, row.content]);
  return { commit: async () => void (await late.query("COMMIT")), end: () => late.end() };
}

describe("the ingress's group commit on PostgreSQL", () => {
  it("a redelivery racing the first delivery's open transaction waits for it: the first's row once it commits, a row of its own if it rolls back", async () => {
    const schema = freshSchema("redelivery");
    const store = await open(schema);
    await store.createSession("s", { source: "test" });
    const delivery = (id: string): InboxInsert => ({ platform: "slack", platformMessageId: id, sessionId: "s", payload: { text: id } });
    for (const outcome of ["COMMIT", "ROLLBACK"] as const) {
      const first = new pg.Client({ connectionString: testDatabaseUrl() });
      await first.connect();
      try {
        await first.query("BEGIN");
        const inserted = await first.query<{ id: string }>(
          `INSERT INTO "${schema}".inbox (platform, platform_message_id, session_id, payload, status, received_at) VALUES ('slack', $1, 's', '{}', 'pending', 1) RETURNING id`,
          [outcome],
        );
        const redelivered = store.recordInboundBatch([delivery("other"), delivery(outcome)]);
        // The batch's insert waits on the open transaction's row.
        expect(await Promise.race([redelivered.then(() => "answered"), new Promise((resolve) => setTimeout(() => resolve("waiting"), 300))])).toBe("waiting");
        await first.query(outcome);
        const [, again] = await redelivered;
        if (outcome === "COMMIT") expect(again).toMatchObject({ inserted: false, row: { id: Number(inserted.rows[0].id) } });
        else expect(again).toMatchObject({ inserted: true, row: { platform_message_id: "ROLLBACK", session_id: "s" } });
      } finally {
        await first.end();
      }
    }
  });
});

describe("transcript reads on PostgreSQL", () => {
  it("return a transcript in id order whatever order its rows lie in (the whole read asks the server for no order)", async () => {
    const schema = freshSchema("row-order");
    // Without index scans, as the server plans the read of a long transcript (a bitmap or a
    // sequential scan): rows come in the order they lie in.
    const noIndexScans = parseConnectionUrl(testDatabaseUrl());
    noIndexScans.params.set("options", "-c enable_indexscan=off -c enable_indexonlyscan=off");
    const store = await open(schema, formatConnectionUrl(noIndexScans));
    await store.createSession("s", { source: "test" });
    // Ids written out of order: the table holds them in the order written, 30, 10, 20.
    const admin = new pg.Client({ connectionString: testDatabaseUrl() });
    await admin.connect();
    try {
      for (const [id, content] of [[30, "third"], [10, "first"], [20, "second"]] as const) {
        await admin.query(`INSERT INTO "${schema}".messages (id, session_id, role, content, timestamp) VALUES ($1, 's', 'user', $2, 1)`, [id, content]);
      }
      await admin.query("SET enable_indexscan = off");
      await admin.query("SET enable_indexonlyscan = off");
      const physical = await admin.query<{ id: string }>(`SELECT id FROM "${schema}".messages WHERE session_id = 's'`);
      expect(physical.rows.map((r) => Number(r.id))).toEqual([30, 10, 20]);
    } finally {
      await admin.end();
    }
    expect((await store.getMessagesAsConversation("s")).map((m) => m.content)).toEqual(["first", "second", "third"]);
    expect((await store.getMessages("s")).map((m) => m.id)).toEqual([10, 20, 30]);
  });

  it("see a message whose lower id committed after a higher one was read (the remembered rows are checked)", async () => {
    const schema = freshSchema("late-commit");
    const store = await open(schema);
    await store.createSession("s", { source: "test" });
    await store.appendMessage("s", { role: "user", content: "first" });
    // A transaction draws an id and has not committed yet; a later insert draws the next and commits.
    const late = await insertLate(schema, { role: "assistant", content: "late" });
    try {
      await store.appendMessage("s", { role: "user", content: "after" });
      const contents = async (): Promise<Array<string | null | undefined>> => (await store.getMessagesAsConversation("s")).map((m) => m.content);
      expect(await contents()).toEqual(["first", "after"]);
      await late.commit();
      expect(await contents()).toEqual(["first", "late", "after"]);
      await store.appendMessage("s", { role: "user", content: "last" });
      expect(await contents()).toEqual(["first", "late", "after", "last"]);
    } finally {
      await late.end();
    }
  });
});


describe("a turn's steps on PostgreSQL, in round trips", () => {
  const proxies: RoundTripProxy[] = [];
  afterEach(async () => {
    for (const proxy of proxies.splice(0)) await proxy.close();
  });

  /** The store behind a proxy that counts round trips, with a session, two transcript rows and a pending message. */
  async function storeBehindProxy(label: string): Promise<{ store: PostgresStore; proxy: RoundTripProxy }> {
    const proxy = await startRoundTripProxy(testDatabaseUrl());
    proxies.push(proxy);
    const store = await open(freshSchema(label), proxy.url);
    await store.createSession("s", { source: "test" });
    await store.appendMessagesBatch("s", [
      { role: "user", content: "hello" },
      { role: "assistant", content: "hi" },
    ]);
    return { store, proxy };
  }

  async function tripsOf<T>(proxy: RoundTripProxy, step: () => Promise<T>): Promise<{ trips: number; value: T }> {
    const before = proxy.roundTrips();
    const value = await step();
    return { trips: proxy.roundTrips() - before, value };
  }

  const admitWithReads = async (store: PostgresStore, holder: string): Promise<TurnStartRead | null> => {
    let read: TurnStartRead | null = null;
    const acquired = await store.acquireSessionTurnLease("s", holder, {
      readUnderLease: { sessionId: "s", pendingInboxLimit: 5, onRead: (r) => (read = r) },
    });
    return acquired ? read : null;
  };

  it("admission with its reads takes one (no BEGIN or COMMIT), the fenced flush one, the release with the head's read one", async () => {
    const { store, proxy } = await storeBehindProxy("trips");
    const { row } = await store.recordInbound({ platform: "api", platformMessageId: "m1", sessionId: "s", payload: { text: "next" } });
    // A first turn opens the pools' connections and prepares their statements.
    await admitWithReads(store, "warm");
    await store.releaseSessionTurnLeaseAndReadHead("s", "warm");

    const admitted = await tripsOf(proxy, () => admitWithReads(store, "A"));
    expect(admitted.value?.transcript.map((m) => m.content)).toEqual(["hello", "hi"]);
    expect(admitted.value?.pendingInbox?.map((r) => r.id)).toEqual([row.id]);
    expect(admitted.trips).toBe(1);

    const flushed = await tripsOf(proxy, () =>
      store.flushTurn("s", [{ role: "user", content: "next" }, { role: "assistant", content: "answer" }], {
        turnLeaseHolder: "A",
        endRecords: { completeInbox: { ids: [row.id], reply: "answer", status: "done" } },
      }),
    );
    expect(flushed.value.messageIds).toHaveLength(2);
    expect(flushed.trips).toBe(1);
    expect((await store.getInboxRow(row.id))?.status).toBe("done");

    const released = await tripsOf(proxy, () => store.releaseSessionTurnLeaseAndReadHead("s", "A"));
    expect(released.value).toBeNull();
    expect(released.trips).toBe(1);
    expect(await store.getSessionTurnLease("s")).toBeNull();
  });

  it("the ingress's group commit: plain rows in one round trip, keyed rows of a live session too, a duplicate's row read after", async () => {
    const { store, proxy } = await storeBehindProxy("batch");
    const row = (id: string): InboxInsert => ({ platform: "api", platformMessageId: id, sessionId: "s", payload: { text: id } });
    const keyed = (id: string): KeyedInboxInsert => ({ platform: "api", platformMessageId: id, payload: { text: id }, sessionForKey: { key: "api:k", newId: "k-session", input: { source: "api" } } });
    // The first keyed row creates the key's session; the next finds it and learns it is a root.
    await store.recordInboundBatch([keyed("warm-1"), row("warm-2")]);
    await store.recordInboundBatch([keyed("warm-3")]);

    const plain = await tripsOf(proxy, () => store.recordInboundBatch(["p1", "p2", "p3", "p4", "p5"].map(row)));
    expect(plain.value.map((r) => r.inserted)).toEqual([true, true, true, true, true]);
    expect(plain.trips).toBe(1);

    const onKey = await tripsOf(proxy, () => store.recordInboundBatch([keyed("k1"), keyed("k2"), row("p6")]));
    expect(onKey.value.map((r) => [r.row.platform_message_id, r.row.session_id])).toEqual([["k1", "k-session"], ["k2", "k-session"], ["p6", "s"]]);
    expect(onKey.trips).toBe(1);

    const again = await tripsOf(proxy, () => store.recordInboundBatch([row("p7"), row("p1")]));
    expect(again.value.map((r) => r.inserted)).toEqual([true, false]);
    expect(again.value[0].row.id).toBeGreaterThan(onKey.value[2].row.id);
    expect(again.value[1].row).toEqual(plain.value[0].row);
    expect(again.trips).toBe(2);
    expect((await store.pendingInbox("s", 100)).map((r) => r.platform_message_id)).toEqual(["warm-2", "p1", "p2", "p3", "p4", "p5", "p6", "p7"]);
  });

  it("a flush sent with its fence is rolled back whole when the fence finds another holder", async () => {
    const { store } = await storeBehindProxy("fence");
    const { row } = await store.recordInbound({ platform: "api", platformMessageId: "m1", sessionId: "s", payload: { text: "next" } });
    expect(await admitWithReads(store, "B")).not.toBeNull();
    await expect(
      store.flushTurn("s", [{ role: "assistant", content: "stale" }], {
        turnLeaseHolder: "A",
        endRecords: { completeInbox: { ids: [row.id], reply: "stale", status: "done" }, deliveries: [{ platform: "slack", sessionId: "s", target: { channel: "C1" }, text: "stale" }] },
      }),
    ).rejects.toBeInstanceOf(TurnLeaseLostError);
    expect((await store.getMessagesAsConversation("s")).map((m) => m.content)).toEqual(["hello", "hi"]);
    expect((await store.getInboxRow(row.id))?.status).toBe("pending");
    expect(await store.deliveriesForSession("s")).toEqual([]);
  });

  it("the fenced flush is one statement: it writes for the holder of the lease, and nothing for another holder or without a lease", async () => {
    const { store } = await storeBehindProxy("one-statement");
    const { row } = await store.recordInbound({ platform: "api", platformMessageId: "m1", sessionId: "s", payload: { text: "next" } });
    expect(await admitWithReads(store, "A")).not.toBeNull();
    const pool = createPool({ connectionString: testDatabaseUrl(), schema: store.schema, maxConnections: 1, lockTimeoutMs: 5_000 });
    const leases = new PgLeaseSql("this-host");
    const flush = (content: string) => ({
      sessionId: "s",
      messages: [{ role: "assistant" as const, content }],
      completion: { ids: [row.id], status: "done", reply: content },
      deliveries: [{ platform: "slack", sessionId: "s", inboxId: row.id, target: { channel: "C1" }, text: content }],
    });
    try {
      // On the pool, outside any transaction: the statement is its own.
      await expect(leases.flush(pool, "s", "B", flush("not B's"), null)).rejects.toBeInstanceOf(TurnLeaseLostError);
      await expect(leases.flush(pool, "no-lease", "A", { ...flush("no lease"), sessionId: "s" }, null)).rejects.toBeInstanceOf(TurnLeaseLostError);
      expect((await store.getInboxRow(row.id))?.status).toBe("pending");
      expect(await store.deliveriesForSession("s")).toEqual([]);
      const written = await leases.flush(pool, "s", "A", flush("A's"), null);
      expect(written.messageIds).toHaveLength(1);
      expect(written.deliveryIds).toHaveLength(1);
    } finally {
      await pool.end();
    }
    expect((await store.getMessagesAsConversation("s")).map((m) => m.content)).toEqual(["hello", "hi", "A's"]);
    expect(await store.getInboxRow(row.id)).toMatchObject({ status: "done", reply: "A's" });
    expect((await store.deliveriesForSession("s")).map((d) => d.text)).toEqual(["A's"]);
  });

  it("flushes of one pass share one round trip; each caller gets its own flush's outcome", async () => {
    const { store, proxy } = await storeBehindProxy("shared");
    // A conversation whose session has no row: its flush fails (foreign key) inside the shared transaction.
    expect(await store.acquireSessionTurnLease("s", "A")).toBe(true);
    expect(await store.acquireSessionTurnLease("ghost", "G")).toBe(true);
    await store.flushTurn("s", [{ role: "assistant", content: "warm" }], { turnLeaseHolder: "A" });
    const shared = await tripsOf(proxy, () =>
      Promise.allSettled([
        store.flushTurn("s", [{ role: "assistant", content: "one" }], { turnLeaseHolder: "A" }),
        store.flushTurn("s", [{ role: "assistant", content: "two" }], { turnLeaseHolder: "A" }),
      ]),
    );
    expect(shared.value.map((outcome) => outcome.status)).toEqual(["fulfilled", "fulfilled"]);
    expect(shared.trips).toBe(1);
    const [good, ghost, stale] = await Promise.allSettled([
      store.flushTurn("s", [{ role: "assistant", content: "three" }], { turnLeaseHolder: "A" }),
      store.flushTurn("ghost", [{ role: "assistant", content: "nowhere" }], { turnLeaseHolder: "G" }),
      store.flushTurn("s", [{ role: "assistant", content: "stale" }], { turnLeaseHolder: "B" }),
    ]);
    expect(good.status).toBe("fulfilled");
    expect(ghost.status === "rejected" && ghost.reason).toBeInstanceOf(UnknownSessionError);
    expect(stale.status === "rejected" && stale.reason).toBeInstanceOf(TurnLeaseLostError);
    expect((await store.getMessagesAsConversation("s")).map((m) => m.content)).toEqual(["hello", "hi", "warm", "one", "two", "three"]);
  });

  it("statements shared in one transaction: one commit for all; when one fails, each runs again alone", async () => {
    const schema = freshSchema("shared-trips");
    await open(schema);
    const pool = createPool({ connectionString: testDatabaseUrl(), schema, maxConnections: 2, lockTimeoutMs: 5_000 });
    try {
      await pool.query("CREATE TABLE probe (x integer PRIMARY KEY)");
      const trips = new SharedTrips(pool, "transaction");
      const insert = (x: number) => trips.run((client) => client.query(`INSERT INTO probe VALUES (${x})`));
      await Promise.all([insert(1), insert(2)]);
      // One transaction: both rows carry the same inserting transaction id.
      expect((await pool.query<{ n: number }>("SELECT count(DISTINCT xmin::text)::int AS n FROM probe")).rows[0].n).toBe(1);
      const outcomes = await Promise.allSettled([insert(3), insert(1), insert(4)]);
      expect(outcomes.map((outcome) => outcome.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
      expect((outcomes[1] as PromiseRejectedResult).reason).toMatchObject({ code: "23505" });
      expect((await pool.query<{ x: number }>("SELECT x FROM probe ORDER BY x")).rows.map((row) => row.x)).toEqual([1, 2, 3, 4]);
    } finally {
      await pool.end();
    }
  });

  it("the admission's reads of a transcript held read its attachments only when the session has one, and then see them", async () => {
    const { store, proxy } = await storeBehindProxy("attached");
    expect((await admitWithReads(store, "A"))?.transcript).toHaveLength(2);
    await store.releaseSessionTurnLease("s", "A");
    const png = new Uint8Array([137, 80, 78, 71]);
    await store.appendMessagesBatch("s", [{ role: "user", content: "look", attachments: [{ content_type: "image/png", size_bytes: png.length, data: png }] }]);
    const admitted = await tripsOf(proxy, () => admitWithReads(store, "B"));
    const look = admitted.value?.transcript.find((m) => m.content === "look");
    expect(look?.attachments?.map((a) => [a.content_type, [...(a.data ?? [])]])).toEqual([["image/png", [...png]]]);
    // The flag came with the newer rows; the attachments are read in a second round trip.
    expect(admitted.trips).toBe(2);
  });

  it("the reads sent with the admission see a lower id committed late, and the tip a compaction moved", async () => {
    const { store } = await storeBehindProxy("late");
    expect((await admitWithReads(store, "A"))?.transcript).toHaveLength(2);
    await store.releaseSessionTurnLease("s", "A");
    const late = await insertLate(store.schema, { role: "user", content: "late" });
    try {
      await store.appendMessage("s", { role: "assistant", content: "after" });
      expect((await admitWithReads(store, "B"))?.transcript.map((m) => m.content)).toEqual(["hello", "hi", "after"]);
      await store.releaseSessionTurnLease("s", "B");
      await late.commit();
    } finally {
      await late.end();
    }
    expect((await admitWithReads(store, "C"))?.transcript.map((m) => m.content)).toEqual(["hello", "hi", "late", "after"]);
    await store.releaseSessionTurnLease("s", "C");

    // A compaction's child becomes the tip: the reads sent for the old one are read again for it.
    await store.endSession("s", COMPRESSION_END_REASON);
    await store.createSession("s-child", { source: "test", parentSessionId: "s" });
    await store.appendMessage("s-child", { role: "user", content: "summary" });
    const moved = await admitWithReads(store, "D");
    expect(moved?.sessionId).toBe("s-child");
    expect(moved?.transcript.map((m) => m.content)).toEqual(["summary"]);
    await store.releaseSessionTurnLease("s", "D");
    expect((await admitWithReads(store, "E"))?.transcript.map((m) => m.content)).toEqual(["summary"]);
  });
});
