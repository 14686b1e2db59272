// How fast a turn is redone after its worker process dies with SIGKILL mid-turn. The victim runs
// a slow model and holds the conversation's lease; the later messages of the conversation were
// already taken off the queue (their jobs returned at once, since a live turn drains its inbox),
// so only the recovery path can bring the conversation back. Measured from the kill to the
// redone turn's recorded reply.
import { afterEach, describe, expect, it } from "vitest";
import { turnJobId } from "../../src/gateway/queues.js";
import { spawnGatewayProcess, startTestGateway, waitFor, type GatewayProcess, type TestGateway } from "../support/gateway.js";
import { inbound } from "../support/messages.js";
import { transcriptProblems } from "./transcript.js";

/** A long first message: at the victim's pace its turn is still streaming when the kill comes. */
const LONG = `recover m0 ${Array.from({ length: 60 }, (_, i) => `w${i}`).join(" ")}`;

interface Recovery {
  /** From the kill to the first message's reply being recorded by the survivor. */
  recoveredMs: number;
  /** When that reply was seen, and when the victim's lease ran out as last seen before the kill (epoch seconds). */
  recoveredAt: number;
  victimLeaseExpiresAt: number;
  problems: string[];
  counts: Record<string, number>;
  sessionId: string;
  texts: string[];
  /** The inbox id of the turn the victim was running: its queue job died with it. */
  killedInboxId: number;
}

describe("a turn worker killed with SIGKILL mid-turn", () => {
  let ingress: TestGateway | null = null;
  const processes: GatewayProcess[] = [];

  afterEach(async () => {
    await Promise.all(processes.splice(0).map((p) => p.stop("SIGKILL")));
    await ingress?.stop();
    ingress = null;
  });

  async function killMidTurn(options: { leaseTtlSeconds: number; victimHostname?: string }): Promise<Recovery> {
    ingress = await startTestGateway({ http: false, workers: false, env: { LEASE_TTL_SECONDS: String(options.leaseTtlSeconds) } });
    const { store, ingress: gatewayIngress } = ingress.gateway;
    // The victim streams a word a second (its turn outlasts the survivor's start); the survivor answers at once.
    const victim = await spawnGatewayProcess(["worker"], { ...ingress.env, ECHO_CHUNK_DELAY_MS: "1000" }, 30_000, { hostname: options.victimHostname });
    processes.push(victim);

    const chat = `recover-${Date.now()}`;
    const texts = [LONG, "recover m1", "recover m2"];
    let sessionId = "";
    const inboxIds: number[] = [];
    for (const text of texts) {
      const result = await gatewayIngress.accept(inbound(chat, text));
      if (result.status !== "accepted") throw new Error(`not accepted: ${result.status}`);
      sessionId = result.sessionId;
      inboxIds.push(result.inboxId);
    }
    await waitFor(async () => (await store.getSessionTurnLease(sessionId))?.holder.startsWith(`pid=${victim.pid}:`), 20_000, "the victim to hold the lease");

    // The survivor starts only now, so the victim took every job of the conversation.
    const survivor = await spawnGatewayProcess(["worker"], { ...ingress.env, ECHO_CHUNK_DELAY_MS: "0" });
    processes.push(survivor);
    const victimLease = await store.getSessionTurnLease(sessionId);
    expect(victimLease?.holder).toMatch(new RegExp(`^pid=${victim.pid}:`));
    expect((await store.getInboxRow(inboxIds[0]))?.status).toBe("pending");

    victim.child.kill("SIGKILL");
    await victim.exited;
    const killedAt = performance.now();
    await waitFor(async () => (await store.getInboxRow(inboxIds[0]))?.status !== "pending", 60_000, "the first message answered after the kill", 20);
    const recoveredMs = Math.round(performance.now() - killedAt);
    // By the store's clock (epoch seconds), against the victim's lease as last seen before the kill.
    const recoveredAt = Date.now() / 1000;
    await waitFor(async () => (await store.inboxCounts()).pending === 0, 30_000, "every message answered", 50);
    return {
      recoveredMs,
      recoveredAt,
      victimLeaseExpiresAt: victimLease!.expires_at,
      problems: await transcriptProblems(store, sessionId, texts),
      counts: await store.inboxCounts(),
      sessionId,
      texts,
      killedInboxId: inboxIds[0],
    };
  }

  it("on the same host: the surviving worker redoes the turn before the lease runs out, answered once, in order", async () => {
    // The TTL is long: only proving the holder dead explains a recovery before the lease ran out.
    const { recoveredMs, recoveredAt, victimLeaseExpiresAt, problems, counts, sessionId, texts, killedInboxId } = await killMidTurn({ leaseTtlSeconds: 60 });
    console.info(`same host: turn redone ${recoveredMs} ms after the kill`);
    expect(problems).toEqual([]);
    expect(counts).toMatchObject({ pending: 0, done: 3, failed: 0, interrupted: 0 });
    expect(recoveredAt).toBeLessThan(victimLeaseExpiresAt);

    // BullMQ hands the dead worker's own job out again once its lock lapsed: it finds its row
    // answered and completes as a no-op (removed on completion), and nothing is answered twice.
    const { store, queues } = ingress!.gateway;
    const rowsBefore = (await store.getMessages(await store.resolveTip(sessionId))).length;
    expect(await queues.turns.getJob(turnJobId(killedInboxId))).toBeDefined();
    await waitFor(async () => !(await queues.turns.getJob(turnJobId(killedInboxId))), 60_000, "the dead worker's job to complete", 250);
    expect(await queues.turns.getJobCounts("failed", "active", "wait", "delayed")).toEqual({ failed: 0, active: 0, wait: 0, delayed: 0 });
    expect(await transcriptProblems(store, sessionId, texts)).toEqual([]);
    expect((await store.getMessages(await store.resolveTip(sessionId))).length).toBe(rowsBefore);
  }, 150_000);

  it("on another host: redone once the lease expires, within the lease TTL + 5 s, answered once, in order", async () => {
    const ttl = 5;
    const { recoveredMs, recoveredAt, victimLeaseExpiresAt, problems, counts } = await killMidTurn({ leaseTtlSeconds: ttl, victimHostname: "switchboard-other-host" });
    console.info(`other host (lease TTL ${ttl} s): turn redone ${recoveredMs} ms after the kill`);
    expect(problems).toEqual([]);
    expect(counts).toMatchObject({ pending: 0, done: 3, failed: 0, interrupted: 0 });
    // A holder on another host cannot be proved dead: its lease is waited out (it may have been
    // refreshed after it was last seen, so it ran out then or later), and not much longer: the
    // lease's time is the behaviour here.
    expect(recoveredAt).toBeGreaterThanOrEqual(victimLeaseExpiresAt);
    expect(recoveredMs).toBeLessThanOrEqual((ttl + 5) * 1000);
  }, 120_000);
});
