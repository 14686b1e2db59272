// Turn recovery on real SQLite and Redis, without workers, so the queue shows exactly what a pass
// added: a stale lease of a conversation with pending messages gets a wake-up job of its own (the
// dead worker's `inbox-<id>` job may still exist) and is reaped; live leases are never touched.
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { recoveryJobId, turnJobId } from "../../src/gateway/queues.js";
import { thisHost } from "../../src/state/index.js";
import { TurnRecovery } from "../../src/gateway/turn-recovery.js";
import { startTestGateway, type TestGateway } from "../support/gateway.js";
import { inbound } from "../support/messages.js";
import { deadPid, sleep } from "../state/helpers.js";

const holderOn = (host: string, pid: number, turn: string): string => `pid=${pid}:host=${host}:turn=${turn}:platform=test`;

describe("turn recovery", () => {
  let gw: TestGateway;
  let recovery: TurnRecovery;

  beforeEach(async () => {
    gw = await startTestGateway({ http: false, workers: false });
    const { store, queues, metrics } = gw.gateway;
    recovery = new TurnRecovery({ store, queues, metrics, logger: pino({ level: "silent" }), intervalMs: 60_000, unclaimedAfterSeconds: 3600 });
  });
  afterEach(async () => {
    recovery.stop();
    await gw.stop();
  });

  /** A conversation with `count` pending messages; returns its id and the inbox ids. */
  async function pendingConversation(chat: string, count: number): Promise<{ conversationId: string; inboxIds: number[] }> {
    const inboxIds: number[] = [];
    let conversationId = "";
    for (let i = 0; i < count; i++) {
      const result = await gw.gateway.ingress.accept(inbound(chat, `${chat} m${i}`));
      if (result.status !== "accepted") throw new Error(`not accepted: ${result.status}`);
      conversationId = result.sessionId;
      inboxIds.push(result.inboxId);
    }
    return { conversationId, inboxIds };
  }

  it("wakes the head of a dead holder's conversation under a job id of its own, and reaps the lease", async () => {
    const { store, queues, metrics } = gw.gateway;
    const { conversationId, inboxIds } = await pendingConversation("dead", 2);
    const dead = holderOn(thisHost(), deadPid(), "dead");
    expect(await store.tryAcquireSessionTurnLease(conversationId, dead, { ttlSeconds: 3600 })).toBe(true);

    expect(await recovery.runOnce()).toBe(1);
    const wakeUp = await queues.turns.getJob(recoveryJobId(inboxIds[0], dead));
    expect(wakeUp?.data).toEqual({ conversationId, inboxId: inboxIds[0] });
    expect(wakeUp?.id).not.toContain(":");
    // The row's own job (the dead worker's, in real life) is still there: no collision.
    expect(await queues.turns.getJob(turnJobId(inboxIds[0]))).toBeDefined();
    expect(await store.getSessionTurnLease(conversationId)).toBeNull();
    expect((await metrics.staleLeasesReaped.get()).values).toEqual([expect.objectContaining({ labels: { reason: "dead" }, value: 1 })]);

    // Nothing stale is left: the next pass adds nothing.
    const before = await queues.turns.count();
    expect(await recovery.runOnce()).toBe(0);
    expect(await queues.turns.count()).toBe(before);
  });

  it("gives every process that finds the same dead holder the same job id, and a new holder a new one", () => {
    const a = holderOn("web-1", 42, "turn-a");
    const b = holderOn("web-1", 42, "turn-b");
    expect(recoveryJobId(7, a)).toBe(recoveryJobId(7, a));
    expect(recoveryJobId(7, a)).not.toBe(recoveryJobId(7, b));
    expect(recoveryJobId(7, a)).toMatch(/^inbox-7-after-[0-9a-f]{16}$/);
  });

  it("leaves a live holder on this host and an unexpired holder on another host alone", async () => {
    const { store, queues } = gw.gateway;
    const live = await pendingConversation("live", 1);
    const remote = await pendingConversation("remote", 1);
    const liveHolder = holderOn(thisHost(), process.ppid, "live");
    // A dead pid, but on another host it proves nothing: only expiry frees it.
    const remoteHolder = holderOn("another-machine", deadPid(), "remote");
    await store.tryAcquireSessionTurnLease(live.conversationId, liveHolder, { ttlSeconds: 3600 });
    await store.tryAcquireSessionTurnLease(remote.conversationId, remoteHolder, { ttlSeconds: 3600 });
    const before = await queues.turns.count();
    expect(await recovery.runOnce()).toBe(0);
    expect(await queues.turns.count()).toBe(before);
    expect((await store.getSessionTurnLease(live.conversationId))?.holder).toBe(liveHolder);
    expect((await store.getSessionTurnLease(remote.conversationId))?.holder).toBe(remoteHolder);
  });

  it("wakes the conversation of another host's holder once its lease expired", async () => {
    const { store, queues } = gw.gateway;
    const { conversationId, inboxIds } = await pendingConversation("expired", 1);
    const remoteHolder = holderOn("another-machine", 4242, "expired");
    await store.tryAcquireSessionTurnLease(conversationId, remoteHolder, { ttlSeconds: 1 });
    expect(await recovery.runOnce()).toBe(0);
    await sleep(1_100);
    expect(await recovery.runOnce()).toBe(1);
    expect((await queues.turns.getJob(recoveryJobId(inboxIds[0], remoteHolder)))?.data.inboxId).toBe(inboxIds[0]);
    expect(await store.getSessionTurnLease(conversationId)).toBeNull();
  });

  it("with nothing pending, tidies a dead holder's lease but leaves an expired one for an acquire", async () => {
    const { store, queues } = gw.gateway;
    const dead = holderOn(thisHost(), deadPid(), "idle-dead");
    const expired = holderOn("another-machine", 4242, "idle-expired");
    await store.tryAcquireSessionTurnLease("idle-dead", dead, { ttlSeconds: 3600 });
    await store.tryAcquireSessionTurnLease("idle-expired", expired, { ttlSeconds: 1 });
    await sleep(1_100);
    const before = await queues.turns.count();
    expect(await recovery.runOnce()).toBe(0);
    expect(await queues.turns.count()).toBe(before);
    expect(await store.getSessionTurnLease("idle-dead")).toBeNull();
    expect((await store.getSessionTurnLease("idle-expired"))?.holder).toBe(expired);
  });

  it("wakes each conversation whose pending rows nobody took once they are old enough, never one a lease covers", async () => {
    const { store, queues, metrics, ingress } = gw.gateway;
    // Wake-ups handed over in memory to a process that then died: accepted, durable, and no job.
    ingress.useWakeUps({ announcer: null, offer: () => ({ rest: [], announced: Promise.resolve() }) });
    const lost = await pendingConversation("lost", 2);
    const held = await pendingConversation("held", 1);
    await store.tryAcquireSessionTurnLease(held.conversationId, holderOn(thisHost(), process.ppid, "held"), { ttlSeconds: 3600 });
    expect(await queues.turns.getJob(turnJobId(lost.inboxIds[0]))).toBeUndefined();

    // Younger than the threshold: nothing yet (a wake-up in memory may still be on its way).
    expect(await recovery.runOnce()).toBe(0);
    const sweeper = new TurnRecovery({ store, queues, metrics, logger: pino({ level: "silent" }), intervalMs: 60_000, unclaimedAfterSeconds: 0 });
    expect(await sweeper.runOnce()).toBe(1);
    // One wake-up for the head of the conversation (it runs the rest in order), none for the held one.
    expect((await queues.turns.getJob(turnJobId(lost.inboxIds[0])))?.data).toEqual({ conversationId: lost.conversationId, inboxId: lost.inboxIds[0] });
    expect(await queues.turns.getJob(turnJobId(lost.inboxIds[1]))).toBeUndefined();
    expect(await queues.turns.getJob(turnJobId(held.inboxIds[0]))).toBeUndefined();
    // Its job waits: the next pass adds nothing new.
    const before = await queues.turns.count();
    await sweeper.runOnce();
    expect(await queues.turns.count()).toBe(before);
  });
});
