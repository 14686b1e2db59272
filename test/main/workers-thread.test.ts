// `switchboard serve` in its default layout: the workers run in a thread of their own. The
// process answers messages from that thread; a thread cut off mid-turn is restarted and its
// turn redone once, at once (its leases are handed on, not left to expire); SIGTERM exits 0.
import { writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { STREAM_START } from "../../src/bus/event-bus.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { askApi } from "../faults/http.js";
import { spawnGatewayProcess, startTestGateway, waitFor, type GatewayProcess, type TestGateway } from "../support/gateway.js";
import { inbound } from "../support/messages.js";
import { transcriptProblems } from "../faults/transcript.js";
import { MCP_SERVER_SCRIPT } from "../support/mcp-server.js";
import { makeTempDir } from "../support/tmp.js";
import { addedTurnJobs } from "../support/redis.js";
import { untilServeSeesTheWorker } from "../support/worker-presence.js";

interface Health {
  workers: boolean;
  workers_thread?: { running: boolean; thread_id: number | null; restarts: number };
  mcp?: Record<string, { state: string; tools: number }>;
}

/** The workers thread's "running" line: its stdout passes through the main thread, so it may trail "ready". */
async function threadLogLine(gateway: GatewayProcess): Promise<void> {
  await waitFor(() => gateway.output().includes('"msg":"workers running in their own thread"'), 10_000, "the workers thread's log line", 20);
}

async function health(url: string): Promise<Health> {
  const response = await fetch(`${url}/health`);
  expect(response.status).toBe(200);
  return (await response.json()) as Health;
}

describe("serve with its workers in a thread", () => {
  let db: TestGateway;
  let serve: GatewayProcess | null = null;

  beforeAll(async () => {
    // The test reads and writes the same database and Redis as the process; it runs no workers.
    // Each reply streams words 100 ms apart, so a turn is caught mid-way; the lease TTL is long:
    // only the handed-on lease explains a quick redo.
    db = await startTestGateway({ http: false, workers: false, env: { ECHO_CHUNK_DELAY_MS: "100", LEASE_TTL_SECONDS: "60" } });
  }, 60_000);

  afterAll(async () => {
    await serve?.stop("SIGKILL");
    await db?.stop();
  });

  it("answers from the thread, redoes a turn cut off by a thread crash once, and exits 0 on SIGTERM", async () => {
    // Its log lines (info) show where the workers run and what the supervisor did.
    serve = await spawnGatewayProcess(["serve"], { ...db.env, LOG_LEVEL: "info" }, 60_000);
    const url = serve.url as string;
    const before = await health(url);
    expect(before.workers).toBe(true);
    expect(before.workers_thread).toMatchObject({ running: true, restarts: 0 });
    const firstThread = before.workers_thread?.thread_id;
    expect(firstThread).toBeGreaterThan(0);
    await threadLogLine(serve);
    expect(serve.output()).toMatch(/"workers":"thread","threadId":\d+.*"msg":"workers running in their own thread"/);

    const { store, ingress } = db.gateway;
    const text = "crash one two three four five six seven eight nine ten eleven twelve";
    const result = await ingress.accept(inbound("thread-crash", text));
    expect(result.status).toBe("accepted");
    if (result.status !== "accepted") return;
    // The turn runs in the serve process: its lease names that pid.
    const lease = await waitFor(async () => {
      const current = await store.getSessionTurnLease(result.sessionId);
      return current?.holder.startsWith(`pid=${serve?.pid}:`) ? current : null;
    }, 30_000, "the turn to start in the serve process", 5);
    const holder = lease.holder;

    serve.child.kill("SIGUSR2");
    // The lease was the thread's: the supervisor hands it on, and a new thread takes over.
    await waitFor(() => serve?.output().includes("handed on a turn lease of the dead workers thread"), 20_000, "the lease handed on");
    expect(serve.output()).toContain(holder);
    await waitFor(async () => (await store.inboxCounts()).done === 1, 30_000, "the message answered after the crash", 50);
    // Answered before the dead thread's lease would have run out (store clock, epoch seconds).
    expect(Date.now() / 1000).toBeLessThan(lease.expires_at);
    const after = await health(url);
    expect(after.workers_thread).toMatchObject({ running: true, restarts: 1 });
    expect(after.workers_thread?.thread_id).not.toBe(firstThread);
    expect(await transcriptProblems(store, result.sessionId, [text])).toEqual([]);

    // The new thread answers the next message too, once.
    const next = await ingress.accept(inbound("thread-crash", "after the crash"));
    expect(next.status).toBe("accepted");
    await waitFor(async () => (await store.inboxCounts()).done === 2, 30_000, "the next message answered", 50);
    expect(await transcriptProblems(store, result.sessionId, [text, "after the crash"])).toEqual([]);

    // /metrics sums the thread's registry into the main thread's: the turns are counted there.
    const metrics = await (await fetch(`${url}/metrics`)).text();
    expect(metrics).toMatch(/^switchboard_turns_total\{platform="test",outcome="completed"\} [1-9]/m);
    expect(metrics.match(/^# TYPE switchboard_turns_total /gm)).toHaveLength(1);
    // Each loop reports its own busy time: the HTTP thread's and the workers thread's.
    expect(metrics).toMatch(/^switchboard_event_loop_busy_seconds_total\{loop="http"\} [0-9.e-]+$/m);
    expect(metrics).toMatch(/^switchboard_event_loop_busy_seconds_total\{loop="workers"\} [0-9.e-]+$/m);
    expect(metrics).not.toMatch(/loop="http\+workers"/);

    // SIGTERM mid-turn: the thread's turn finishes within SHUTDOWN_TIMEOUT_MS (10 s), then both exit 0.
    const last = await ingress.accept(inbound("thread-crash", "stopping one two three four five"));
    expect(last.status).toBe("accepted");
    await waitFor(() => store.getSessionTurnLease(result.sessionId), 30_000, "the last turn to start", 5);
    const code = await serve.stop("SIGTERM");
    expect(code, serve.output()).toBe(0);
    expect(serve.output()).not.toMatch(/shutdown failed|deadline passed|did not stop in time/);
    expect(await store.getSessionTurnLease(result.sessionId)).toBeNull();
    expect(await transcriptProblems(store, result.sessionId, [text, "after the crash", "stopping one two three four five"])).toEqual([]);
  }, 150_000);

  it("interrupts a thread's turn that outlives SHUTDOWN_TIMEOUT_MS on SIGTERM, and exits 0", async () => {
    const slow = await spawnGatewayProcess(["serve"], { ...db.env, ECHO_CHUNK_DELAY_MS: "400", SHUTDOWN_TIMEOUT_MS: "500" }, 60_000);
    try {
      const words = Array.from({ length: 30 }, (_, i) => `w${i}`).join(" ");
      const accepted = await db.gateway.ingress.accept(inbound("thread-slow", words));
      if (accepted.status !== "accepted") throw new Error("not accepted");
      await waitFor(() => db.gateway.store.getSessionTurnLease(accepted.sessionId), 30_000, "the turn to start", 5);
      const started = Date.now();
      expect(await slow.stop("SIGTERM"), slow.output()).toBe(0);
      // The deadline firing is the behaviour: out well before the turn's own end (some 12 s), with
      // a bound 16x the 500 ms deadline; the row's status below says it was interrupted.
      expect(Date.now() - started).toBeLessThan(8_000);
      expect((await db.gateway.store.getInboxRow(accepted.inboxId))?.status).toBe("interrupted");
      expect(await db.gateway.store.getSessionTurnLease(accepted.sessionId)).toBeNull();
    } finally {
      await slow.stop("SIGKILL");
    }
  }, 90_000);

  it("shows on /health the MCP servers its workers thread runs", async () => {
    const temp = makeTempDir("sb-thread-mcp");
    const configPath = join(temp.dir, "switchboard.yaml");
    const server = {
      command: process.execPath,
      args: ["--import", "tsx", MCP_SERVER_SCRIPT],
      cwd: resolve(import.meta.dirname, "..", ".."),
      env: { MCP_TEST_JOURNAL: join(temp.dir, "journal.jsonl") },
    };
    // JSON is YAML: the same loader as an operator's file.
    writeFileSync(configPath, JSON.stringify({ mcp_servers: { local: server } }));
    const withMcp = await spawnGatewayProcess(["serve"], { ...db.env, SWITCHBOARD_CONFIG: configPath }, 60_000);
    try {
      const connected = await waitFor(async () => {
        const body = await health(withMcp.url as string);
        return body.mcp?.local?.state === "connected" ? body : null;
      }, 60_000, "the thread's MCP server on /health", 100);
      expect(connected.mcp?.local?.tools).toBeGreaterThan(0);
    } finally {
      expect(await withMcp.stop("SIGTERM"), withMcp.output()).toBe(0);
      temp.cleanup();
    }
  }, 90_000);

  it("answers API requests from the outcomes its workers thread hands over, not from rows read back", async () => {
    const apiKey = "thread-outcomes-api-key";
    const served = await spawnGatewayProcess(["serve"], { ...db.env, SWITCHBOARD_API_KEY: apiKey }, 60_000);
    try {
      const ask = async (text: string): Promise<string> => {
        const response = await fetch(`${served.url as string}/v1/chat/completions`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${apiKey}`, "x-session-id": "thread-outcomes" },
          body: JSON.stringify({ model: "echo", messages: [{ role: "user", content: text }] }),
        });
        expect(response.status).toBe(200);
        return ((await response.json()) as { choices: Array<{ message: { content: string } }> }).choices[0].message.content;
      };
      for (const text of ["one", "two", "three"]) expect(await ask(`outcome ${text}`)).toContain(`outcome ${text}`);
      const metrics = await (await fetch(`${served.url as string}/metrics`)).text();
      const waits = (source: string): number => Number(new RegExp(`switchboard_outcome_waits_total\\{source="${source}"\\} (\\d+)`).exec(metrics)?.[1] ?? 0);
      // A release heard through Redis before the thread's message only reads a row; the outcome
      // comes from memory unless that read found the row already done.
      expect(waits("memory") + waits("row")).toBe(3);
      expect(waits("memory")).toBeGreaterThanOrEqual(2);
    } finally {
      expect(await served.stop("SIGTERM"), served.output()).toBe(0);
    }
  }, 90_000);

  it("keeps the one-loop layout with WORKERS_LAYOUT=inline", async () => {
    const inline = await spawnGatewayProcess(["serve"], { ...db.env, LOG_LEVEL: "info", WORKERS_LAYOUT: "inline" }, 60_000);
    try {
      const body = await health(inline.url as string);
      expect(body.workers).toBe(true);
      expect(body.workers_thread).toBeUndefined();
      const result = await db.gateway.ingress.accept(inbound("inline-layout", "inline hello"));
      expect(result.status).toBe("accepted");
      if (result.status !== "accepted") return;
      await waitFor(async () => (await db.gateway.store.pendingInbox(result.sessionId, 1)).length === 0, 30_000, "the inline answer", 50);
      expect(await transcriptProblems(db.gateway.store, result.sessionId, ["inline hello"])).toEqual([]);
      expect(inline.output()).not.toContain("workers running in their own thread");
    } finally {
      expect(await inline.stop("SIGTERM")).toBe(0);
    }
  }, 90_000);

  // Alone, serve wakes every turn in memory; beside a worker process, what its free slots do not
  // take goes through the queue, announced by the workers thread before it is enqueued.
  it.each(["alone", "beside a worker process"] as const)("%s, stores each message's message.queued before the turn.started of the turn that answers it", async (layout) => {
    // Turns start the moment their wake-up arrives: the event published by the thread that ran the
    // ingress used to lose that race now and then.
    const shared = layout !== "alone";
    // Two slots each, turns of a few 10 ms words: the 40 sessions overflow serve's free slots.
    const env = { ...db.env, ...(shared ? { WORKER_CONCURRENCY: "2", ECHO_CHUNK_DELAY_MS: "10" } : { ECHO_CHUNK_DELAY_MS: "0" }) };
    const sessions = Array.from({ length: 40 }, (_, i) => `queued-first-${shared ? "shared" : "alone"}-${i}`);
    const processes: GatewayProcess[] = [];
    try {
      if (shared) processes.push(await spawnGatewayProcess(["worker"], env, 60_000));
      const serve = await spawnGatewayProcess(["serve"], env, 60_000);
      processes.push(serve);
      if (shared) await untilServeSeesTheWorker(db.env.REDIS_URL, db.env.SWITCHBOARD_QUEUE_PREFIX);
      const jobsBefore = await addedTurnJobs(db.env.REDIS_URL, db.env.SWITCHBOARD_QUEUE_PREFIX);
      await Promise.all(
        sessions.map(async (session) => {
          for (let m = 0; m < 3; m++) expect((await askApi(serve.url as string, session, `${session} says ${m}`)).status).toBe(200);
        }),
      );
      const jobs = (await addedTurnJobs(db.env.REDIS_URL, db.env.SWITCHBOARD_QUEUE_PREFIX)) - jobsBefore;
      // Alone: not one job. Beside a worker: some wake-ups went through the queue.
      if (shared) expect(jobs).toBeGreaterThan(0);
      else expect(jobs).toBe(0);
    } finally {
      for (const proc of processes.reverse()) expect(await proc.stop("SIGTERM")).toBe(0);
    }
    for (const session of sessions) {
      const kinds: string[] = [];
      for await (const page of db.gateway.events.replay(session, STREAM_START)) kinds.push(...page.map((event) => event.kind));
      const queued = kinds.filter((kind) => kind === "message.queued").length;
      expect(queued, `${session}: ${kinds.join(", ")}`).toBe(3);
      let announced = 0;
      let started = 0;
      for (const kind of kinds) {
        if (kind === "message.queued") announced++;
        if (kind === "turn.started") expect(++started, `${session}: ${kinds.join(", ")}`).toBeLessThanOrEqual(announced);
      }
    }
  }, 120_000);
});
