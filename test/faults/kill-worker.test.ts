// kill -9 of a worker process mid-turn, under load: 500 messages over 50 sessions, two worker
// processes, slow echo model. Afterwards every message is answered, none twice, order kept.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnGatewayProcess, startTestGateway, waitFor, type GatewayProcess, type TestGateway } from "../support/gateway.js";
import { inbound } from "../support/messages.js";
import { transcriptProblems } from "./transcript.js";

const SESSIONS = 50;
const PER_SESSION = 10;
const TOTAL = SESSIONS * PER_SESSION;

describe("a worker killed with SIGKILL mid-turn under load", () => {
  let ingress: TestGateway;
  const workers: GatewayProcess[] = [];

  beforeAll(async () => {
    // Each turn streams a few words 25 ms apart, so many turns are in flight at any moment. The
    // lease TTL is long: only reaping the dead holder explains a quick recovery.
    ingress = await startTestGateway({
      http: false,
      workers: false,
      env: { ECHO_CHUNK_DELAY_MS: "25", LEASE_TTL_SECONDS: "60", WORKER_CONCURRENCY: "16" },
    });
    for (let i = 0; i < 2; i++) workers.push(await spawnGatewayProcess(["worker"], ingress.env));
  }, 60_000);

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop("SIGKILL")));
    await ingress?.stop();
  });

  it("answers all 500 messages exactly once and in order", async () => {
    const { store, ingress: gatewayIngress } = ingress.gateway;
    const texts = Array.from({ length: SESSIONS }, (_, s) => Array.from({ length: PER_SESSION }, (_, m) => `kill s${s} m${m} one two three`));
    const sessionIds: string[] = [];
    // Messages arrive interleaved across sessions, each session's in order.
    for (let m = 0; m < PER_SESSION; m++) {
      for (let s = 0; s < SESSIONS; s++) {
        const result = await gatewayIngress.accept(inbound(`kill-${s}`, texts[s][m]));
        expect(result.status).toBe("accepted");
        if (result.status === "accepted") sessionIds[s] = result.sessionId;
      }
    }

    // Under way: some turns done, and the victim holds leases of turns it is running right now.
    await waitFor(async () => (await store.inboxCounts()).done >= TOTAL / 5, 60_000, "a fifth of the messages answered");
    const victim = workers[0];
    const held = await waitFor(async () => {
      const leases = await Promise.all(sessionIds.map((id) => store.getSessionTurnLease(id)));
      const mine = leases.filter((l) => l?.holder.startsWith(`pid=${victim.pid}:`));
      return mine.length > 0 ? mine : null;
    }, 20_000, "the victim to hold a turn lease", 5);
    victim.child.kill("SIGKILL");
    await victim.exited;
    // When the first of the dead holder's leases would run out, by the store's clock (epoch seconds).
    const firstExpiry = Math.min(...held.map((lease) => lease!.expires_at));
    const doneAtKill = (await store.inboxCounts()).done;
    expect(held.length).toBeGreaterThan(0);
    expect(doneAtKill).toBeLessThan(TOTAL);

    await waitFor(async () => (await store.inboxCounts()).pending === 0, 90_000, "every message processed after the kill", 200);
    // All done before the dead holder's first lease would have run out: reaped, not waited out.
    expect(Date.now() / 1000).toBeLessThan(firstExpiry);
    const counts = await store.inboxCounts();
    expect(counts).toMatchObject({ pending: 0, done: TOTAL, failed: 0, interrupted: 0 });

    const problems = (await Promise.all(sessionIds.map((id, s) => transcriptProblems(store, id, texts[s])))).flat();
    expect(problems).toEqual([]);
  }, 150_000);
});
