// kill -9 of a worker mid-turn: the message is answered once by the other worker, and the
// session's next message is not held up by the lease TTL (the dead holder is reaped).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnGatewayProcess, startTestGateway, waitFor, type GatewayProcess, type TestGateway } from "../support/gateway.js";
import { inbound } from "../support/messages.js";

describe("a worker killed mid-turn", () => {
  let ingress: TestGateway;
  const workers: GatewayProcess[] = [];

  beforeAll(async () => {
    // Slow echo turns (a chunk every 150 ms) and a long lease TTL: only reaping can explain a fast recovery.
    ingress = await startTestGateway({ http: false, workers: false, env: { ECHO_CHUNK_DELAY_MS: "150", LEASE_TTL_SECONDS: "60" } });
    for (let i = 0; i < 2; i++) workers.push(await spawnGatewayProcess(["worker"], ingress.env));
  }, 60_000);

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop("SIGKILL")));
    await ingress?.stop();
  });

  it("is answered once by the other worker, and the next message is not delayed by the lease TTL", async () => {
    const { store } = ingress.gateway;
    const first = await ingress.gateway.ingress.accept(inbound("crash", "one two three four five six seven eight nine ten eleven twelve"));
    if (first.status !== "accepted") throw new Error(`not accepted: ${first.status}`);
    const conversation = first.sessionId;
    // Wait until a worker holds the turn and has started streaming.
    const lease = await waitFor(() => store.getSessionTurnLease(conversation), 20_000, "a worker to take the turn");
    await new Promise((r) => setTimeout(r, 300));
    const holderPid = Number(/^pid=(\d+)/.exec(lease.holder)?.[1]);
    const victim = workers.find((w) => w.pid === holderPid);
    expect(victim, `holder ${lease.holder} is one of our workers`).toBeDefined();
    victim?.child.kill("SIGKILL");
    await victim?.exited;
    const killedAt = Date.now();

    const second = await ingress.gateway.ingress.accept(inbound("crash", "after the crash"));
    if (second.status !== "accepted") throw new Error("second not accepted");
    const outcome2 = await ingress.gateway.ingress.waitForOutcome(second.inboxId, 30_000);
    const recovery = Date.now() - killedAt;
    // Far under the 60 s lease TTL and under BullMQ's stalled-job recovery (15 s lock + 5 s check):
    // the survivor reaps the dead holder at once and drains the session.
    expect(recovery).toBeLessThan(10_000);

    const outcome1 = await ingress.gateway.ingress.waitForOutcome(first.inboxId, 30_000);
    expect(outcome1.status).toBe("done");
    expect(outcome1.reply).toContain("twelve");
    expect(outcome2.reply).toContain("after the crash");

    const rows = await store.getMessages(await store.resolveTip(conversation));
    const users = rows.filter((m) => m.role === "user").map((m) => m.content);
    expect(users).toEqual(["one two three four five six seven eight nine ten eleven twelve", "after the crash"]);
    const answers = rows.filter((m) => m.role === "assistant").map((m) => m.content);
    expect(answers).toHaveLength(2);
    expect(answers[0]).toContain("twelve");
    expect(answers[1]).toContain("after the crash");
  }, 90_000);
});
