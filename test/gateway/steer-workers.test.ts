// Busy mode 'steer' with two worker processes (`switchboard worker`, one turn at a time each):
// the new message's job is taken by the process that is NOT running the turn (the other one's
// only slot is busy with it), completes at once, and the running turn in the other process still
// takes the message at its next model step, reading the inbox under its lease.
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { turnJobId } from "../../src/gateway/queues.js";
import { messagesOf, startFakeOpenAI, textOfMessage, type FakeOpenAI, type RecordedRequest } from "../support/fake-openai.js";
import { waitFor } from "../support/gateway.js";
import { inbound } from "../support/messages.js";
import { makeTempDir } from "../support/tmp.js";
import { startTestGateway, type TestGateway } from "../clients/support/gateway.js";
import { spawnWorker, type WorkerProcess } from "../clients/support/worker-process.js";

let fake: FakeOpenAI;
let gw: TestGateway;
let configDir: ReturnType<typeof makeTempDir>;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  fake = await startFakeOpenAI({ apiKey: "model-key" });
  configDir = makeTempDir("sb-steer-workers");
  const configFile = join(configDir.dir, "switchboard.yaml");
  writeFileSync(configFile, "busy_modes:\n  test: steer\n");
  const env = { SWITCHBOARD_CONFIG: configFile, WORKER_CONCURRENCY: "1", LLM_BASE_URL: fake.url, LLM_API_KEY: "model-key", LLM_MODEL: "fake-model" };
  // Ingress only here; the turns run in the two worker processes.
  gw = await startTestGateway({ label: "steer-workers", workers: false, env });
  for (const name of ["w1", "w2"]) workers.push(await spawnWorker({ ...gw.workerEnv, SWITCHBOARD_DATA_DIR: join(gw.dir, name) }));
}, 90_000);

afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop()));
  await gw?.stop();
  await fake?.close();
  configDir?.cleanup();
});

const token = (): string => randomBytes(4).toString("hex");

function requestsMentioning(text: string): RecordedRequest[] {
  return fake.completionRequests().filter((r) => messagesOf(r).some((m) => m.role === "user" && textOfMessage(m).includes(text)));
}

describe("busy mode steer with two worker processes", () => {
  it("a message whose job another process takes still joins the running turn at its next model step", async () => {
    const { ingress, store, queues } = gw.gateway;
    const chat = `steer-${token()}`;
    const first = `look something up ${token()}`;
    const second = `also this ${token()}`;
    const gate = `workers-${token()}`;
    fake.enqueue({ kind: "tool_calls", calls: [{ name: "get_current_time", arguments: {} }], holdUntil: gate });

    const a = await ingress.accept(inbound(chat, first));
    if (a.status !== "accepted") throw new Error("not accepted");
    await fake.waitFor(() => requestsMentioning(first).length === 1, 15_000, "the turn's first model request");
    const lease = await store.getSessionTurnLease(a.sessionId);
    const runningPid = Number(/^pid=(\d+):/.exec(lease?.holder ?? "")?.[1]);
    expect(workers.map((w) => w.pid)).toContain(runningPid);

    const b = await ingress.accept(inbound(chat, second));
    if (b.status !== "accepted") throw new Error("not accepted");
    // The running process has no free slot: the other process took B's job and let it go at
    // once (the conversation's turn is running), while the turn is still held in its first step.
    await waitFor(async () => (await queues.turns.getJob(turnJobId(b.inboxId))) === undefined, 15_000, "the second job to complete");
    expect(await store.getInboxRow(b.inboxId)).toMatchObject({ status: "pending" });
    expect(await store.getSessionTurnLease(a.sessionId)).toMatchObject({ holder: lease?.holder });

    fake.release(gate);
    const [oa, ob] = await Promise.all([ingress.waitForOutcome(a.inboxId, 20_000), ingress.waitForOutcome(b.inboxId, 20_000)]);
    expect(oa).toMatchObject({ status: "done", reply: `Echo: ${second}` });
    expect(ob).toMatchObject({ status: "done", reply: `Echo: ${second}` });

    const requests = requestsMentioning(first);
    expect(requests).toHaveLength(2);
    const roles = messagesOf(requests[1]).filter((m) => m.role !== "system").map((m) => m.role);
    expect(roles).toEqual(["user", "assistant", "tool", "user"]);
    expect(textOfMessage(messagesOf(requests[1]).at(-1)!)).toBe(second);
    expect(requestsMentioning(second)).toHaveLength(1);
    const rows = await store.getMessages(a.sessionId);
    expect(rows.map((m) => [m.role, m.role === "user" || m.finish_reason === "stop" ? m.content : "…"])).toEqual([
      ["user", first],
      ["assistant", "…"],
      ["tool", "…"],
      ["user", second],
      ["assistant", `Echo: ${second}`],
    ]);
  }, 60_000);
});
