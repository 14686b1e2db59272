// The SQLite file locked by another writer for 2 s (a separate process holding BEGIN IMMEDIATE):
// turns and acks wait for the lock instead of failing, the event loop keeps serving, and nothing
// is lost.
import { spawn, type ChildProcess } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { InboxStatus } from "../../src/state/types.js";
import { startTestGateway, waitFor, type TestGateway } from "../support/gateway.js";
import { makeTempDir } from "../support/tmp.js";
import { askApi, postWebhook, replyOf, startCallbackSink, webhookConfig, type Answer, type CallbackSink } from "./http.js";
import { transcriptProblems } from "./transcript.js";

const LOCK_MS = 2000;
const PROJECT_ROOT = join(import.meta.dirname, "..", "..");

// A plain better-sqlite3 connection in its own process: take the write lock, hold it, commit.
const LOCKER = `
const Database = require("better-sqlite3");
const db = new Database(process.argv[1]);
db.pragma("busy_timeout = 10000");
db.exec("BEGIN IMMEDIATE");
process.stdout.write("locked\\n");
setTimeout(() => { db.exec("COMMIT"); db.close(); process.stdout.write("released\\n"); }, Number(process.argv[2]));
`;

function holdWriteLock(dbPath: string, ms: number): { child: ChildProcess; locked: Promise<void>; released: Promise<number> } {
  const child = spawn(process.execPath, ["-e", LOCKER, dbPath, String(ms)], { cwd: PROJECT_ROOT, stdio: ["ignore", "pipe", "inherit"] });
  const locked = new Promise<void>((resolve, reject) => {
    child.stdout?.on("data", (d: Buffer) => {
      if (d.toString().includes("locked")) resolve();
    });
    child.once("exit", (code) => reject(new Error(`locker exited with ${code} before locking`)));
  });
  const released = new Promise<number>((resolve) => child.once("exit", (code) => resolve(code ?? -1)));
  return { child, locked, released };
}

const totalOf = (counts: Record<InboxStatus, number>): number => Object.values(counts).reduce((a, b) => a + b, 0);

describe("the SQLite file locked by another writer", () => {
  const temp = makeTempDir("sb-fault-lock");
  let gw: TestGateway;
  let sink: CallbackSink;

  beforeAll(async () => {
    sink = await startCallbackSink();
    const config = join(temp.dir, "switchboard.yaml");
    writeFileSync(config, webhookConfig(sink.url));
    gw = await startTestGateway({ env: { SWITCHBOARD_CONFIG: config, ECHO_CHUNK_DELAY_MS: "20" } });
  }, 60_000);

  afterAll(async () => {
    await gw?.stop();
    await sink?.close();
    temp.cleanup();
  });

  it("makes turns and acks wait for the lock, keeps serving, and loses nothing", async () => {
    const base = gw.gateway.url as string;
    const { store } = gw.gateway;
    const run = Date.now().toString(36);
    const sessions = ["a", "b", "c", "d"].map((s) => `lock-${s}-${run}`);
    const warm = await askApi(base, `lock-warm-${run}`, "warm up");
    expect(warm.status).toBe(200);

    // Turns in flight when the lock is taken: thirty words at 20 ms each. All four are recorded
    // before the lock, so each session's order is known.
    const before = totalOf(await store.inboxCounts());
    const words = Array.from({ length: 28 }, (_, i) => `w${i}`).join(" ");
    const firstTexts = sessions.map((s) => `first for ${s} ${words}`);
    const first = sessions.map((s, i) => askApi(base, s, firstTexts[i]));
    await waitFor(async () => totalOf(await store.inboxCounts()) >= before + sessions.length, 10_000, "the first messages recorded", 5);
    await waitFor(async () => (await Promise.all(sessions.map((s) => store.getSessionTurnLease(s)))).some(Boolean), 10_000, "a turn to start", 5);

    const lock = holdWriteLock(join(gw.dir, "switchboard.db"), LOCK_MS);
    await lock.locked;
    const lockedAt = performance.now();

    const secondTexts = sessions.map((s) => `second for ${s}`);
    const second = sessions.map((s, i) => askApi(base, s, secondTexts[i]));
    const webhooks: Array<Promise<Answer>> = [];
    for (let i = 0; i < 10; i++) webhooks.push(postWebhook(base, { id: `${run}-${i}`, chat_id: `lock-chat-${run}`, text: `webhook ${i} during the lock` }));
    // Awaited below; if an assertion fails first they must not surface as unhandled rejections.
    for (const pending of [...first, ...second, ...webhooks]) pending.catch(() => undefined);

    // The event loop is not frozen by the lock: a request that needs no database is answered
    // while the lock is still held (a frozen loop would answer it only after the release).
    let released = false;
    void lock.released.then(() => (released = true));
    const probes: number[] = [];
    let answeredUnderLock = 0;
    while (performance.now() - lockedAt < LOCK_MS - 300) {
      const started = performance.now();
      const res = await fetch(`${base}/v1/models`);
      expect(res.status).toBe(200);
      if (!released) answeredUnderLock += 1;
      probes.push(performance.now() - started);
      await sleep(150);
    }
    expect(await lock.released).toBe(0);
    const releasedAt = performance.now();

    const acks = await Promise.all(webhooks);
    expect(acks.map((a) => a.status)).toEqual(acks.map(() => 202));
    // The acks really waited for the lock (the fixture bit), then went through.
    expect(Math.max(...acks.map((a) => a.ms))).toBeGreaterThan(LOCK_MS / 2);
    // Soft: a stalled event loop is a finding of its own; the nothing-lost checks below still run.
    expect.soft(answeredUnderLock, `GET /v1/models during the lock took ${probes.map((p) => p.toFixed(0)).join(", ")} ms`).toBeGreaterThanOrEqual(3);

    const answers = await Promise.all([...first, ...second]);
    for (const answer of answers) expect(answer.status, answer.body).toBe(200);
    answers.forEach((answer, i) => expect(replyOf(answer)).toContain(i < 4 ? firstTexts[i] : secondTexts[i - 4]));
    expect(performance.now() - releasedAt).toBeLessThan(30_000);

    await waitFor(async () => (await store.inboxCounts()).pending === 0, 30_000, "every inbox row processed", 100);
    await waitFor(() => Array.from({ length: 10 }, (_, i) => sink.replies.has(`${run}-${i}`)).every(Boolean), 30_000, "every webhook reply", 100);
    const problems = (await Promise.all(sessions.map((s, i) => transcriptProblems(store, s, [firstTexts[i], secondTexts[i]])))).flat();
    const hook = await store.findInboxRow("webhook", `faults:${run}-0`);
    const hookTexts = (await Promise.all(Array.from({ length: 10 }, (_, i) => store.findInboxRow("webhook", `faults:${run}-${i}`))))
      .filter((r): r is NonNullable<typeof r> => r !== null)
      .sort((x, y) => x.id - y.id)
      .map((r) => (r.payload as { text: string }).text);
    expect(hookTexts).toHaveLength(10);
    problems.push(...(await transcriptProblems(store, hook?.session_id ?? "", hookTexts)));
    expect(problems).toEqual([]);
  }, 90_000);
});
