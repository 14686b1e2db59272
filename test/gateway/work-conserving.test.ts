// Work-conserving wake-ups: alone, `serve` keeps every turn of the messages it accepts in memory
// (a queue job would only come back to it); once another process runs workers on the same queue,
// it keeps only what its free slots take and the rest go on the BullMQ queue, where the added
// `switchboard worker` takes its share (and `serve` takes jobs as its slots free up). Each process
// talks to a model server of its own, so the calls each one made are counted where they arrive. Order, one answer per message
// and nothing lost hold as ever, also when the worker is killed holding spilled turns.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { askApi, replyOf } from "../faults/http.js";
import { transcriptProblems } from "../faults/transcript.js";
import { startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai.js";
import { addedTurnJobs } from "../support/redis.js";
import { untilServeSeesTheWorker } from "../support/worker-presence.js";
import { spawnGatewayProcess, startTestGateway, waitFor, type GatewayProcess, type TestGateway } from "../support/gateway.js";

const API_KEY = "work-conserving-key";
/** Every model call takes this long before it answers: turns hold their slots. */
const MODEL_DELAY_MS = 400;
const SLOTS = 2;

/** Each session sends its messages one after another, every session at once; the texts sent, by session. */
async function converse(url: string, sessions: string[], perSession: number): Promise<Map<string, string[]>> {
  const sent = new Map<string, string[]>();
  await Promise.all(
    sessions.map(async (session) => {
      const texts: string[] = [];
      sent.set(session, texts);
      for (let m = 0; m < perSession; m++) {
        const text = `${session} message ${m}`;
        texts.push(text);
        const answer = await askApi(url, session, text);
        expect(answer.status, answer.body).toBe(200);
        expect(replyOf(answer)).toContain(text);
      }
    }),
  );
  return sent;
}

describe.each(["thread", "inline"] as const)("work-conserving wake-ups (WORKERS_LAYOUT=%s)", (layout) => {
  let db: TestGateway;
  let serveModel: FakeOpenAI;
  let workerModel: FakeOpenAI;
  const processes: GatewayProcess[] = [];

  const modelEnv = (model: FakeOpenAI): Record<string, string> => ({ LLM_BASE_URL: model.url, LLM_API_KEY: API_KEY, LLM_MODEL: "fake-model" });
  const start = async (args: string[], model: FakeOpenAI): Promise<GatewayProcess> => {
    const proc = await spawnGatewayProcess(args, { ...db.env, WORKERS_LAYOUT: layout, WORKER_CONCURRENCY: String(SLOTS), ...modelEnv(model) }, 60_000);
    processes.push(proc);
    return proc;
  };

  beforeAll(async () => {
    // The test reads the same database and Redis as the processes; it runs no workers itself.
    db = await startTestGateway({ http: false, workers: false });
    serveModel = await startFakeOpenAI({ apiKey: API_KEY, defaultResponse: { kind: "echo", delayMs: MODEL_DELAY_MS } });
    workerModel = await startFakeOpenAI({ apiKey: API_KEY, defaultResponse: { kind: "echo", delayMs: MODEL_DELAY_MS } });
  }, 60_000);

  afterAll(async () => {
    await Promise.all(processes.map((p) => p.stop()));
    await Promise.all([serveModel?.close(), workerModel?.close()]);
    await db?.stop();
  });

  it("serve alone keeps the turns in memory: not one queue job", async () => {
    const serve = await start(["serve"], serveModel);
    const before = await addedTurnJobs(db.env.REDIS_URL, db.env.SWITCHBOARD_QUEUE_PREFIX);
    const sessions = Array.from({ length: 6 }, (_, i) => `alone-${layout}-${i}`);
    const sent = await converse(serve.url as string, sessions, 2);
    for (const [session, texts] of sent) expect(await transcriptProblems(db.gateway.store, session, texts)).toEqual([]);
    expect((await addedTurnJobs(db.env.REDIS_URL, db.env.SWITCHBOARD_QUEUE_PREFIX)) - before).toBe(0);
    expect(serveModel.completionRequests()).toHaveLength(12);
    expect(await serve.stop("SIGTERM")).toBe(0);
  }, 90_000);

  it("an added worker process takes its share of the turns of messages serve accepted", async () => {
    const callsBefore = serveModel.completionRequests().length;
    const serve = await start(["serve"], serveModel);
    await start(["worker"], workerModel);
    await untilServeSeesTheWorker(db.env.REDIS_URL, db.env.SWITCHBOARD_QUEUE_PREFIX);
    const jobsBefore = await addedTurnJobs(db.env.REDIS_URL, db.env.SWITCHBOARD_QUEUE_PREFIX);
    const sessions = Array.from({ length: 8 }, (_, i) => `shared-${layout}-${i}`);
    const sent = await converse(serve.url as string, sessions, 2);
    for (const [session, texts] of sent) expect(await transcriptProblems(db.gateway.store, session, texts)).toEqual([]);
    const byServe = serveModel.completionRequests().length - callsBefore;
    const byWorker = workerModel.completionRequests().length;
    // One model call per message, each made once, and each process made at least a quarter of them.
    expect(byServe + byWorker).toBe(16);
    expect(byWorker).toBeGreaterThanOrEqual(4);
    expect(byServe).toBeGreaterThanOrEqual(4);
    // What serve's free slots did not take went through the queue.
    expect((await addedTurnJobs(db.env.REDIS_URL, db.env.SWITCHBOARD_QUEUE_PREFIX)) - jobsBefore).toBeGreaterThanOrEqual(byWorker);
    expect(await serve.stop("SIGTERM")).toBe(0);
  }, 90_000);

  if (layout === "thread") {
    it("loses nothing when the worker is killed mid-turn while it holds spilled turns", async () => {
      const serve = await start(["serve"], serveModel);
      const victim = await start(["worker"], workerModel);
      await untilServeSeesTheWorker(db.env.REDIS_URL, db.env.SWITCHBOARD_QUEUE_PREFIX);
      const victimCalls = workerModel.completionRequests().length;
      const sessions = Array.from({ length: 8 }, (_, i) => `killed-${layout}-${i}`);
      const conversing = converse(serve.url as string, sessions, 2);
      // The worker took spilled wake-ups and is inside their model calls: kill it there.
      await waitFor(() => workerModel.completionRequests().length >= victimCalls + SLOTS, 30_000, "the worker running spilled turns");
      victim.child.kill("SIGKILL");
      const sent = await conversing;
      for (const [session, texts] of sent) expect(await transcriptProblems(db.gateway.store, session, texts)).toEqual([]);
      expect(await serve.stop("SIGTERM")).toBe(0);
    }, 120_000);
  }
});
