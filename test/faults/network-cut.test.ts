// A network cut mid-turn, on the several-machines setup (PostgreSQL + Redis). One gateway node
// runs in a network namespace of its own, under its own host name, and reaches PostgreSQL and
// Redis only over a veth pair, through TCP forwarders on the host's end. Its link goes down while
// it streams a long answer: it can neither refresh its turn lease nor write. The lease expires,
// a node on the host takes the conversation over and answers. Then the link comes back and the
// cut node's writes, held in its TCP buffers, reach the database late: the fence refuses them.
// A trigger records which node wrote each row (by the connection's application_name), so the
// test can show that nothing from the cut node's lost turn landed after the takeover.
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { redisOptionsFromUrl } from "../../src/bus/redis-url.js";
import { idempotentMessageId } from "../../src/clients/openai/chat-completions.js";
import { openStore, type SessionStore } from "../../src/state/index.js";
import { formatConnectionUrl, parseConnectionUrl } from "../../src/state/postgres/connection-url.js";
import { spawnGatewayProcess, waitFor, type GatewayProcess } from "../support/gateway.js";
import { createNetworkNamespace, networkNamespaceSupport, type NetworkNamespace } from "../support/netns.js";
import { dropSchema, testDatabaseUrl, uniqueSchema } from "../support/postgres.js";
import { newRedisClient, testRedisUrl, uniquePrefix } from "../support/redis.js";
import { startTcpForwarder, type ForwardTarget, type TcpForwarder } from "../support/tcp-forwarder.js";
import { makeTempDir } from "../support/tmp.js";
import { transcriptProblems } from "./transcript.js";

const LEASE_TTL_SECONDS = 5;
/** 160 words at 150 ms a word: the cut node's turn would stream for about 24 s, far past the cut. */
const LONG_WORDS = Array.from({ length: 160 }, (_, i) => `w${i}`).join(" ");
const API_KEY = "network-cut-test-api-key";
const CUT_APP = "switchboard-cut-node";
const HOST_APP = "switchboard-host-node";

const unsupported = networkNamespaceSupport();
if (unsupported) console.warn(`network-cut test skipped: ${unsupported}`);

interface AuditRow {
  tbl: string;
  op: string;
  app: string;
  holder: string | null;
  at: Date;
}

/** Where the forwarder sends PostgreSQL connections: the server's TCP address or its unix socket. */
function postgresTarget(url: string): ForwardTarget {
  const parsed = parseConnectionUrl(url);
  const port = Number(parsed.port || 5432);
  if (parsed.host.startsWith("/")) return { path: join(parsed.host, `.s.PGSQL.${port}`) };
  return { host: parsed.host || "localhost", port };
}

/** The same database reached through the forwarder, the connections named after the node. */
function postgresUrlVia(url: string, forwarder: TcpForwarder, applicationName: string): string {
  const parsed = parseConnectionUrl(url);
  parsed.params.set("application_name", applicationName);
  return formatConnectionUrl({ ...parsed, host: forwarder.host, port: String(forwarder.port) });
}

function withApplicationName(url: string, applicationName: string): string {
  return `${url}${url.includes("?") ? "&" : "?"}application_name=${applicationName}`;
}

function redisTarget(url: string): ForwardTarget {
  const options = redisOptionsFromUrl(url);
  return options.path ? { path: options.path } : { host: options.host ?? "127.0.0.1", port: options.port ?? 6379 };
}

function redisUrlVia(url: string, forwarder: TcpForwarder): string {
  const options = redisOptionsFromUrl(url);
  const auth = options.password ? `${encodeURIComponent(options.username ?? "")}:${encodeURIComponent(options.password)}@` : "";
  return `redis://${auth}${forwarder.host}:${forwarder.port}/${options.db ?? 0}`;
}

/** Record every row written to the store's tables, with the writing connection's name and the time. */
async function installWriteAudit(client: pg.Client, schema: string): Promise<void> {
  const s = `"${schema}"`;
  await client.query(`
    CREATE TABLE ${s}.write_audit (id BIGSERIAL PRIMARY KEY, tbl TEXT, op TEXT, app TEXT, holder TEXT, at TIMESTAMPTZ);
    CREATE FUNCTION ${s}.audit_write() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE r jsonb := to_jsonb(CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END);
    BEGIN
      INSERT INTO ${s}.write_audit (tbl, op, app, holder, at)
      VALUES (TG_TABLE_NAME, TG_OP, current_setting('application_name'), r->>'holder', clock_timestamp());
      RETURN NULL;
    END $$;
    ${["messages", "inbox", "deliveries", "session_turn_leases", "sessions"]
      .map((table) => `CREATE TRIGGER audit_write AFTER INSERT OR UPDATE OR DELETE ON ${s}.${table} FOR EACH ROW EXECUTE FUNCTION ${s}.audit_write();`)
      .join("\n")}`);
}

function chat(url: string, sessionId: string, key: string, text: string, signal?: AbortSignal): Promise<Response | Error> {
  return fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${API_KEY}`, "x-session-id": sessionId, "idempotency-key": key },
    body: JSON.stringify(chatBody(text)),
    signal,
  }).catch((err: Error) => err);
}

function chatBody(text: string): unknown {
  return { model: "echo", messages: [{ role: "user", content: text }] };
}

/** The inbox key of the chat request with this session, Idempotency-Key and text. */
function inboxKey(sessionId: string, key: string, text: string): string {
  return idempotentMessageId(sessionId, chatBody(text), key);
}

async function replyText(response: Response | Error): Promise<string> {
  if (response instanceof Error) throw response;
  const body = (await response.json()) as { choices?: { message: { content: string } }[] };
  if (response.status !== 200) throw new Error(`status ${response.status}: ${JSON.stringify(body)}`);
  return body.choices?.[0]?.message.content ?? "";
}

describe.skipIf(unsupported !== null)(`a node whose network is cut mid-turn${unsupported ? ` (skipped: ${unsupported})` : ""}`, () => {
  const url = testDatabaseUrl();
  const schema = uniqueSchema("netcut");
  const temps: { cleanup: () => void }[] = [];
  const processes: GatewayProcess[] = [];
  const forwarders: TcpForwarder[] = [];
  const requests = new AbortController();
  let namespace: NetworkNamespace | null = null;
  let store: SessionStore | null = null;
  let audit: pg.Client | null = null;

  afterAll(async () => {
    // Always, whatever failed above: the processes, the forwarders, the namespace with its veth
    // pair and route, the schema and the folders.
    requests.abort();
    await Promise.all(processes.map((p) => p.stop("SIGKILL")));
    await Promise.all(forwarders.map((f) => f.close()));
    namespace?.remove();
    await audit?.end().catch(() => undefined);
    await store?.close();
    await dropSchema(url, schema);
    for (const temp of temps) temp.cleanup();
  });

  it("fences out the cut node's late write; the host node answers every message once, in order", async () => {
    namespace = createNetworkNamespace("sbcut");
    const ns = namespace;
    forwarders.push(await startTcpForwarder(ns.hostAddress, postgresTarget(url)));
    forwarders.push(await startTcpForwarder(ns.hostAddress, redisTarget(testRedisUrl())));
    const [pgForwarder, redisForwarder] = forwarders;

    // The schema and the audit trigger exist before either node starts.
    store = await openStore({ databaseUrl: url, databaseSchema: schema, dbPath: "" });
    const db = store;
    audit = new pg.Client({ connectionString: url });
    await audit.connect();
    await installWriteAudit(audit, schema);

    const run = randomUUID().slice(0, 8);
    const shared = {
      DATABASE_SCHEMA: schema,
      SWITCHBOARD_QUEUE_PREFIX: uniquePrefix("netcut"),
      SWITCHBOARD_API_KEY: API_KEY,
      LEASE_TTL_SECONDS: String(LEASE_TTL_SECONDS),
      LOG_LEVEL: "warn",
      PORT: "0",
    };
    const nodeEnv = (name: string, extra: Record<string, string>): Record<string, string> => {
      const temp = makeTempDir(`sb-${name}`);
      temps.push(temp);
      return { ...shared, SWITCHBOARD_DATA_DIR: temp.dir, SWITCHBOARD_DB: join(temp.dir, "switchboard.db"), ...extra };
    };

    // The cut node: alone in its namespace, listening on its end of the pair.
    const cutNode = await spawnGatewayProcess(
      ["serve"],
      nodeEnv("cut", {
        DATABASE_URL: postgresUrlVia(url, pgForwarder, CUT_APP),
        REDIS_URL: redisUrlVia(testRedisUrl(), redisForwarder),
        HOST: ns.innerAddress,
        ECHO_CHUNK_DELAY_MS: "150",
      }),
      60_000,
      { prefix: ns.execPrefix, hostname: `switchboard-cut-${run}` },
    );
    processes.push(cutNode);
    const cutUrl = cutNode.url as string;
    expect(cutUrl).toContain(ns.innerAddress);

    // The first message goes to the cut node, the only node yet: it runs the turn.
    const sessionId = `netcut-${run}`;
    const texts = [`${sessionId} m0 ${LONG_WORDS}`, `${sessionId} m1`, `${sessionId} m2`];
    const first = chat(cutUrl, sessionId, "m0", texts[0], requests.signal);
    const cutHolder = await waitFor(async () => (await db.getSessionTurnLease(sessionId))?.holder, 30_000, "the cut node to take the first turn", 20);
    expect(cutHolder).toContain(`pid=${cutNode.pid}:`);
    expect(cutHolder).toContain(`host=switchboard-cut-${run}`);

    // The host node, started while that turn streams; it answers at once (no echo delay).
    const hostNode = await spawnGatewayProcess(
      ["serve"],
      nodeEnv("host", { DATABASE_URL: withApplicationName(url, HOST_APP), REDIS_URL: testRedisUrl(), ECHO_CHUNK_DELAY_MS: "0" }),
      60_000,
      { hostname: `switchboard-host-${run}` },
    );
    processes.push(hostNode);
    const hostUrl = hostNode.url as string;

    // Cut mid-turn.
    expect((await db.findInboxRow("api", inboxKey(sessionId, "m0", texts[0])))?.status).toBe("pending");
    expect((await db.getSessionTurnLease(sessionId))?.holder).toBe(cutHolder);
    ns.cut();
    const cutAt = performance.now();

    // More of the conversation, through the host node: it must wait out the cut node's lease.
    const later: Promise<Response | Error>[] = [];
    for (const i of [1, 2]) {
      later.push(chat(hostUrl, sessionId, `m${i}`, texts[i]));
      await waitFor(() => db.findInboxRow("api", inboxKey(sessionId, `m${i}`, texts[i])), 20_000, `m${i} recorded`, 20);
    }
    await waitFor(
      async () => {
        const holder = (await db.getSessionTurnLease(sessionId))?.holder;
        return (holder !== undefined && holder !== cutHolder) || (await db.findInboxRow("api", inboxKey(sessionId, "m0", texts[0])))?.status !== "pending";
      },
      30_000,
      "the host node to take the conversation over",
      20,
    );
    const takenOverMs = Math.round(performance.now() - cutAt);
    for (const i of [0, 1, 2]) {
      await waitFor(async () => (await db.findInboxRow("api", inboxKey(sessionId, `m${i}`, texts[i])))?.status === "done", 30_000, `m${i} answered`, 50);
    }
    const answeredMs = Math.round(performance.now() - cutAt);
    // The cut node holds its lease until it expires, never beyond: the takeover waits at most the TTL (plus polling).
    expect(takenOverMs).toBeLessThanOrEqual((LEASE_TTL_SECONDS + 5) * 1000);

    // The link comes back: the cut node's buffered writes reach PostgreSQL late.
    ns.restore();
    const restoredAt = performance.now();
    // Its turn's events, published once Redis is reachable again: the refresher's refused
    // refresh (the lease-lost notice), then the turn's end.
    const redis = newRedisClient();
    const cutTurnEnd = async (): Promise<{ kind: string; data: Record<string, unknown> }[] | null> => {
      const entries = await redis.xrange(`${shared.SWITCHBOARD_QUEUE_PREFIX}:events:${sessionId}`, "-", "+");
      const events = entries.map(([, fields]) => ({ kind: fields[1], data: JSON.parse(fields[3]) as Record<string, unknown> }));
      const lost = events.findIndex((e) => e.kind === "status" && String(e.data.text).includes("lease was lost"));
      if (lost < 0) return null;
      const after = events.slice(lost + 1).filter((e) => e.kind.startsWith("turn."));
      return after.length ? after : null;
    };
    let ending: { kind: string; data: Record<string, unknown> }[];
    try {
      ending = await waitFor(cutTurnEnd, 60_000, "the cut node's turn to learn it lost the lease, and end", 200);
    } finally {
      redis.disconnect();
    }
    const fencedMs = Math.round(performance.now() - restoredAt);
    // The flush it made once the link was back was refused by the fence (turn_lease_lost is the
    // outcome of a refused fenced write), and its turn ended failed.
    expect(ending[0]).toMatchObject({ kind: "turn.failed", data: { error: "turn_lease_lost", failure_reason: "turn_lease", inbox_ids: [1] } });
    console.info(
      `network cut (lease TTL ${LEASE_TTL_SECONDS} s): taken over ${takenOverMs} ms and answered ${answeredMs} ms after the cut; ` +
        `the cut node's turn ended (lease lost) ${fencedMs} ms after the link came back`,
    );

    // Every message answered once: m1 and m2 by the host node as sent, m0 when the client retries
    // it there (same key) — its first request went to the cut node.
    expect(await replyText(await chat(hostUrl, sessionId, "m0", texts[0]))).toContain(texts[0]);
    for (const [index, response] of later.entries()) expect(await replyText(await response)).toContain(texts[index + 1]);
    expect(await transcriptProblems(db, sessionId, texts)).toEqual([]);
    expect(await db.inboxCounts()).toMatchObject({ pending: 0, done: texts.length, failed: 0, rejected: 0 });

    // Who wrote what, and when. The takeover is the first lease write of another holder.
    const rows = (await audit.query<AuditRow>(`SELECT tbl, op, app, holder, at FROM "${schema}".write_audit ORDER BY id`)).rows;
    const takeover = rows.find((r) => r.tbl === "session_turn_leases" && r.op !== "DELETE" && r.holder !== null && r.holder !== cutHolder);
    expect(takeover?.app).toBe(HOST_APP);
    const takeoverAt = (takeover as AuditRow).at.getTime();
    const cutBefore = rows.filter((r) => r.app === CUT_APP && r.at.getTime() < takeoverAt);
    // The cut node did write while it held the lease (its admission at least): the audit sees it.
    expect(cutBefore.some((r) => r.tbl === "session_turn_leases" && r.holder === cutHolder)).toBe(true);
    // After the takeover nothing of its lost turn landed: no transcript, inbox or delivery row,
    // and no lease write as the old holder. (Lease rows under a new holder would be a later job of
    // its own, legitimately admitted.)
    const late = rows.filter(
      (r) => r.app === CUT_APP && r.at.getTime() >= takeoverAt && (r.tbl !== "session_turn_leases" || r.holder === cutHolder),
    );
    expect(late).toEqual([]);
    requests.abort();
    await first;
  }, 180_000);
});
