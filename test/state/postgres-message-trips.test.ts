// What one message costs on PostgreSQL, counted: the statements a gateway sends for it, the round
// trips they take and the commits among them, stage by stage (a wrapper on pg's Client.query; see
// support/query-counter.ts), held as upper bounds (bench/README.md, "PostgreSQL round trips"): a
// change that adds a round trip or a statement to a stage fails here, whatever the timing.
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { stringify as toYaml } from "yaml";
import { signWebhook } from "../../src/adapters/webhook/index.js";
import { startCallbackReceiver, type CallbackReceiver } from "../platforms/support/callback-receiver.js";
import { startTestGateway, waitFor, type TestGateway } from "../support/gateway.js";
import { dropSchema, testDatabaseUrl, uniqueSchema } from "../support/postgres.js";
import { countQueries, type QueryCounter, type StageCounts } from "../support/query-counter.js";
import { makeTempDir } from "../support/tmp.js";

const SECRET = `whsec_${randomBytes(24).toString("base64")}`;

let gateway: TestGateway | null = null;
let counter: QueryCounter | null = null;
let receiver: CallbackReceiver | null = null;
const cleanups: Array<() => void> = [];
const schemas: string[] = [];

afterEach(async () => {
  counter?.stop();
  counter = null;
  await gateway?.stop();
  gateway = null;
  await receiver?.close();
  receiver = null;
  for (const cleanup of cleanups.splice(0)) cleanup();
  for (const schema of schemas.splice(0)) await dropSchema(testDatabaseUrl(), schema);
});

/** A gateway on a schema of its own, with a webhook route whose replies go to a callback receiver. */
async function startCounted(): Promise<{ url: string; counter: QueryCounter }> {
  const schema = uniqueSchema("trips");
  schemas.push(schema);
  receiver = await startCallbackReceiver();
  const config = makeTempDir("sb-trips");
  cleanups.push(() => config.cleanup());
  const configFile = join(config.dir, "switchboard.yaml");
  writeFileSync(configFile, toYaml({ webhooks: { notes: { secret: SECRET, style: "standard", reply: "callback", callback_url: receiver.url } } }));
  counter = countQueries();
  gateway = await startTestGateway({ env: { DATABASE_URL: testDatabaseUrl(), DATABASE_SCHEMA: schema, SWITCHBOARD_CONFIG: configFile, LOG_LEVEL: "silent" } });
  return { url: gateway.gateway.url ?? "", counter };
}

async function ask(url: string, session: string, text: string): Promise<void> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-session-id": session },
    body: JSON.stringify({ model: "echo", messages: [{ role: "user", content: text }] }),
  });
  expect(res.status).toBe(200);
  expect(await res.text()).toContain(text);
}

async function hook(url: string, id: string, text: string): Promise<void> {
  const body = JSON.stringify({ chat_id: "room", user_id: "u-1", text });
  const res = await fetch(`${url}/webhooks/notes`, {
    method: "POST",
    headers: { "content-type": "application/json", ...signWebhook("standard", SECRET, body, { id }) },
    body,
  });
  expect(res.status).toBe(202);
  await waitFor(() => receiver?.received.find((r) => r.body.toString("utf8").includes(text)), 10_000, `the reply to ${id}`);
}

/** The counts of a path's stages, once the timers' own reads (turn recovery, the reconciler) are left out. */
function stagesOf(counted: QueryCounter): Record<string, StageCounts> {
  const background = new Set(["staleSessionTurnLeases", "unclaimedPendingHeads", "listPendingInbox", "listUnsentDeliveries", "(none)"]);
  return Object.fromEntries(Object.entries(counted.byStage()).filter(([stage]) => !background.has(stage)));
}

const settle = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 200));

/**
 * The stages of one counted message on a fresh gateway, after three warm-up messages have opened
 * the pools' connections, prepared their statements and seated the session.
 */
async function countedStages(send: (url: string, i: number | "counted") => Promise<void>): Promise<Record<string, StageCounts>> {
  const { url, counter: counted } = await startCounted();
  for (let i = 0; i < 3; i++) await send(url, i);
  await settle();
  counted.reset();
  await send(url, "counted");
  await settle();
  return stagesOf(counted);
}

describe("one message's path on PostgreSQL", () => {
  it("an API message: ingress, admission with its reads and the input stored, the reply's fenced flush and the release in 7 statements and 4 round trips", async () => {
    const stages = await countedStages((url, i) => (i === "counted" ? ask(url, "s1", "counted") : ask(url, "s1", `warm ${i}`)));
    expect(stages).toEqual({
      recordInboundBatch: { statements: 1, roundTrips: 1, commits: 1 },
      // The acquire (a commit) and the transcript's read, then the tip and the pending head with the input stored under the lease (a commit).
      acquireSessionTurnLease: { statements: 3, roundTrips: 1, commits: 2 },
      flushTurn: { statements: 1, roundTrips: 1, commits: 1 },
      releaseSessionTurnLeaseAndReadHead: { statements: 2, roundTrips: 1, commits: 1 },
    });
  });

  it("a new session's first API message: its row created with the input at admission, 10 statements and 6 round trips", async () => {
    const stages = await countedStages((url, i) => (i === "counted" ? ask(url, "fresh", "counted") : ask(url, `warm-${i}`, `warm ${i}`)));
    expect(stages).toEqual({
      // The ingress's read of its conversation and the session's source (the lease's own is the admission's first statement): an id without a row is read each time.
      addressedSession: { statements: 1, roundTrips: 1, commits: 0 },
      recordInboundBatch: { statements: 1, roundTrips: 1, commits: 1 },
      acquireSessionTurnLease: { statements: 5, roundTrips: 2, commits: 2 },
      flushTurn: { statements: 1, roundTrips: 1, commits: 1 },
      releaseSessionTurnLeaseAndReadHead: { statements: 2, roundTrips: 1, commits: 1 },
    });
  });

  it("a webhook message answered by a callback adds its delivery's mark: one statement, one round trip", async () => {
    const stages = await countedStages((url, i) => (i === "counted" ? hook(url, "counted", "counted hook") : hook(url, `warm-${i}`, `warm hook ${i}`)));
    expect(stages.markDeliverySent).toEqual({ statements: 1, roundTrips: 1, commits: 1 });
    const total = Object.values(stages).reduce((sum, stage) => ({ statements: sum.statements + stage.statements, roundTrips: sum.roundTrips + stage.roundTrips, commits: sum.commits + stage.commits }));
    // The ingress places the row under its key's live session in its one statement.
    expect(stages.recordInboundBatch).toEqual({ statements: 1, roundTrips: 1, commits: 1 });
    expect(total).toEqual({ statements: 8, roundTrips: 5, commits: 6 });
  });
});
