import { readlinkSync } from "node:fs";
import Database, { type Statement } from "better-sqlite3";
import { hostname } from "node:os";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { makeHolder, parseHolder, SessionDBClosedError, thisHost } from "../../src/state/index.js";
import type { TurnStartRead } from "../../src/state/types.js";
import { sqliteBackend, storeBackends, type TestStore } from "../support/store-backends.js";
import { countTransactions } from "../support/transaction-counter.js";
import { deadPid, FAR_POLL_MS, FAR_WAIT_SECONDS, manualClock, orStillWaiting, sleep, tempStore, until, type TempStore } from "./helpers.js";

const HOST = "test-host";
const holderOn = (host: string, pid: number, turn = "t") => `pid=${pid}:host=${host}:turn=${turn}`;

describe("holders", () => {
  it("makeHolder carries pid, host, session, an 8-character turn id and the platform", () => {
    const holder = makeHolder({ sessionId: "sess:1", platform: "slack" });
    expect(holder).toMatch(new RegExp(`^pid=${process.pid}:host=${thisHost()}:turn=sess:1:[0-9a-f]{8}:platform=slack$`));
    expect(makeHolder({ sessionId: "s", platform: "api", turnId: "abc", host: "web-1" })).toBe(
      `pid=${process.pid}:host=web-1:turn=s:abc:platform=api`,
    );
    expect(parseHolder(holder)).toEqual({ pid: process.pid, host: thisHost() });
    expect(parseHolder("pid=12:turn=x:host=spoofed")).toEqual({ pid: 12, host: null });
    expect(parseHolder("worker-7")).toBeNull();
  });

  it("names this host by its host name and, on Linux, its pid namespace: only there is a missing pid proof of death", async () => {
    const namespace = /^pid:\[(\d+)\]$/.exec(readlinkSync("/proc/self/ns/pid"))?.[1];
    expect(thisHost()).toBe(`${hostname()}/pidns-${namespace}`);
    // A process in another pid namespace under the same host name (a container on host
    // networking) names the bare host name, or another namespace: never reaped early from here.
    const sqlite = tempStore("sb-lease-host");
    const db = sqlite.open();
    const dead = deadPid();
    for (const [index, host] of [hostname(), `${hostname()}/pidns-1`].entries()) {
      expect(await db.tryAcquireSessionTurnLease(`other-ns-${index}`, `pid=${dead}:host=${host}:turn=t`, { ttlSeconds: 3600 })).toBe(true);
      expect(await db.tryAcquireSessionTurnLease(`other-ns-${index}`, "B"), host).toBe(false);
    }
    expect(await db.staleSessionTurnLeases()).toEqual([]);
    // The same dead pid named with this host is reaped at once.
    expect(await db.tryAcquireSessionTurnLease("same-ns", `pid=${dead}:host=${thisHost()}:turn=t`, { ttlSeconds: 3600 })).toBe(true);
    expect(await db.tryAcquireSessionTurnLease("same-ns", "B")).toBe(true);
    await sqlite.cleanup();
  });
});

describe.each(storeBackends)("lease on $name", (backend) => {
  let store: TestStore;
  beforeEach(() => {
    store = backend.create("lease");
  });
  afterEach(async () => {
    await store.cleanup();
  });

  describe("tryAcquireSessionTurnLease", () => {
    it("admits the first holder, refuses a second while it lives, and re-admits the same holder with a fresh expiry", async () => {
      const clock = manualClock(1000);
      const db = await store.open({ now: clock.now, hostname: HOST });
      expect(await db.tryAcquireSessionTurnLease("s", "A", { ttlSeconds: 10 })).toBe(true);
      expect(await db.getSessionTurnLease("s")).toEqual({ holder: "A", acquired_at: 1000, expires_at: 1010 });
      expect(await db.tryAcquireSessionTurnLease("s", "B", { ttlSeconds: 10 })).toBe(false);
      clock.advance(5);
      expect(await db.tryAcquireSessionTurnLease("s", "A", { ttlSeconds: 10 })).toBe(true);
      expect(await db.getSessionTurnLease("s")).toEqual({ holder: "A", acquired_at: 1000, expires_at: 1015 });
    });

    it("takes over an expired lease", async () => {
      const clock = manualClock(1000);
      const db = await store.open({ now: clock.now, hostname: HOST });
      expect(await db.tryAcquireSessionTurnLease("s", "A", { ttlSeconds: 10 })).toBe(true);
      clock.advance(9.9);
      expect(await db.tryAcquireSessionTurnLease("s", "B", { ttlSeconds: 10 })).toBe(false);
      clock.advance(0.1);
      expect(await db.tryAcquireSessionTurnLease("s", "B", { ttlSeconds: 10 })).toBe(true);
      expect((await db.getSessionTurnLease("s"))?.holder).toBe("B");
    });

    it("reaps a holder on this host whose process is provably dead, long before its TTL", async () => {
      const db = await store.open({ hostname: HOST });
      expect(await db.tryAcquireSessionTurnLease("s", holderOn(HOST, deadPid()), { ttlSeconds: 3600 })).toBe(true);
      expect(await db.tryAcquireSessionTurnLease("s", "B")).toBe(true);
    });

    it("never reaps early a live process, a holder on another host, or a holder that names no host", async () => {
      const db = await store.open({ hostname: HOST });
      const dead = deadPid();
      const cases = [
        holderOn(HOST, process.ppid), // alive
        holderOn(HOST, process.pid), // ourselves
        holderOn("other-host", dead), // dead pid, but not provably: it is another machine's pid
        `pid=${dead}:turn=stale`, // no host: never reaped early
        "opaque-holder",
      ];
      for (const [index, holder] of cases.entries()) {
        const session = `s${index}`;
        expect(await db.tryAcquireSessionTurnLease(session, holder, { ttlSeconds: 3600 })).toBe(true);
        expect(await db.tryAcquireSessionTurnLease(session, "B"), holder).toBe(false);
      }
    });

    it("keys the lease by the conversation id (the chain's root), so every session of a chain shares it", async () => {
      const db = await store.open();
      await db.createSession("root", { source: "t" });
      await db.endSession("root", "compression");
      await db.createSession("tip", { source: "t", parentSessionId: "root" });
      expect(await db.tryAcquireSessionTurnLease("tip", "A")).toBe(true);
      expect(await db.tryAcquireSessionTurnLease("root", "B")).toBe(false);
      expect((await db.getSessionTurnLease("root"))?.holder).toBe("A");
      // A client-addressed session with no row yet is leased under its own id.
      expect(await db.tryAcquireSessionTurnLease("fresh-client-id", "A")).toBe(true);
      expect(await db.tryAcquireSessionTurnLease("fresh-client-id", "B")).toBe(false);
    });

    it("many holders racing for a free lease from two connections: exactly one wins", async () => {
      const a = await store.open();
      const b = await store.open();
      const holders = Array.from({ length: 8 }, (_, i) => `racer-${i}`);
      const won = await Promise.all(holders.map((holder, i) => (i % 2 ? a : b).tryAcquireSessionTurnLease("race", holder, { ttlSeconds: 60 })));
      expect(won.filter(Boolean)).toHaveLength(1);
      expect((await a.getSessionTurnLease("race"))?.holder).toBe(holders[won.indexOf(true)]);
    });

    it("rejects a non-positive TTL", async () => {
      const db = await store.open();
      await expect(db.tryAcquireSessionTurnLease("s", "A", { ttlSeconds: 0 })).rejects.toThrow(RangeError);
    });
  });

  describe("refresh and release", () => {
    it("refresh extends expiry only for the holder, keeping its TTL unless a new one is given", async () => {
      const clock = manualClock(0);
      const db = await store.open({ now: clock.now });
      expect(await db.refreshSessionTurnLease("s", "A")).toBe(false); // no row
      await db.tryAcquireSessionTurnLease("s", "A", { ttlSeconds: 10 });
      clock.advance(4);
      expect(await db.refreshSessionTurnLease("s", "B")).toBe(false);
      expect(await db.refreshSessionTurnLease("s", "A")).toBe(true);
      expect((await db.getSessionTurnLease("s"))?.expires_at).toBe(14);
      expect(await db.refreshSessionTurnLease("s", "A", { ttlSeconds: 30 })).toBe(true);
      expect((await db.getSessionTurnLease("s"))?.expires_at).toBe(34);
      // Run out without anyone taking it: still the holder's row, so refresh revives it.
      clock.advance(100);
      expect(await db.refreshSessionTurnLease("s", "A")).toBe(true);
      expect((await db.getSessionTurnLease("s"))?.expires_at).toBe(134);
    });

    it("release deletes only the caller's own row and is idempotent", async () => {
      const db = await store.open();
      await db.tryAcquireSessionTurnLease("s", "A");
      await db.releaseSessionTurnLease("s", "B");
      expect((await db.getSessionTurnLease("s"))?.holder).toBe("A");
      await db.releaseSessionTurnLease("s", "A");
      await db.releaseSessionTurnLease("s", "A");
      expect(await db.getSessionTurnLease("s")).toBeNull();
      expect(await db.tryAcquireSessionTurnLease("s", "B")).toBe(true);
    });
  });

  describe("stale leases and their reaping", () => {
    it("lists dead holders on this host and expired leases, never a live one", async () => {
      const clock = manualClock(1000);
      const db = await store.open({ now: clock.now, hostname: HOST });
      const dead = holderOn(HOST, deadPid(), "dead");
      await db.tryAcquireSessionTurnLease("dead", dead, { ttlSeconds: 3600 });
      await db.tryAcquireSessionTurnLease("alive", holderOn(HOST, process.ppid, "alive"), { ttlSeconds: 3600 });
      await db.tryAcquireSessionTurnLease("elsewhere", holderOn("other-host", deadPid(), "elsewhere"), { ttlSeconds: 10 });
      await db.tryAcquireSessionTurnLease("short", "opaque", { ttlSeconds: 5 });
      expect(await db.staleSessionTurnLeases()).toEqual([{ conversationId: "dead", holder: dead, reason: "dead" }]);
      clock.advance(5);
      expect(await db.staleSessionTurnLeases()).toEqual([
        { conversationId: "dead", holder: dead, reason: "dead" },
        { conversationId: "short", holder: "opaque", reason: "expired" },
      ]);
      // Another host's holder is stale only once its time ran out.
      clock.advance(5);
      expect((await db.staleSessionTurnLeases()).map((l) => l.conversationId).sort()).toEqual(["dead", "elsewhere", "short"]);
    });

    it("lists the leases this process holds: its pid on this host, no other", async () => {
      const db = await store.open({ hostname: HOST });
      const mine = holderOn(HOST, process.pid, "mine");
      await db.tryAcquireSessionTurnLease("mine", mine, { ttlSeconds: 3600 });
      await db.tryAcquireSessionTurnLease("parent", holderOn(HOST, process.ppid, "parent"), { ttlSeconds: 3600 });
      await db.tryAcquireSessionTurnLease("twin", holderOn("other-host", process.pid, "twin"), { ttlSeconds: 3600 });
      await db.tryAcquireSessionTurnLease("opaque", "opaque", { ttlSeconds: 3600 });
      expect(await db.sessionTurnLeasesOfThisProcess()).toEqual([{ conversationId: "mine", holder: mine }]);
      await db.releaseSessionTurnLease("mine", mine);
      expect(await db.sessionTurnLeasesOfThisProcess()).toEqual([]);
    });

    it("reaps only the holder it was found with, and only while it is still stale", async () => {
      const clock = manualClock(1000);
      const db = await store.open({ now: clock.now, hostname: HOST });
      // A live holder on this host is never reaped.
      const alive = holderOn(HOST, process.ppid, "alive");
      await db.tryAcquireSessionTurnLease("alive", alive, { ttlSeconds: 60 });
      expect(await db.reapSessionTurnLease("alive", alive)).toBe(false);
      // Expired, then refreshed by its holder before the reap: it stays.
      await db.tryAcquireSessionTurnLease("slow", "slow-holder", { ttlSeconds: 5 });
      clock.advance(6);
      expect(await db.staleSessionTurnLeases()).toEqual([{ conversationId: "slow", holder: "slow-holder", reason: "expired" }]);
      expect(await db.refreshSessionTurnLease("slow", "slow-holder")).toBe(true);
      expect(await db.reapSessionTurnLease("slow", "slow-holder")).toBe(false);
      expect((await db.getSessionTurnLease("slow"))?.holder).toBe("slow-holder");
      // Found dead, but another holder took the lease before the reap: the new holder keeps it.
      const dead = holderOn(HOST, deadPid(), "dead");
      await db.tryAcquireSessionTurnLease("taken", dead, { ttlSeconds: 60 });
      expect(await db.tryAcquireSessionTurnLease("taken", "new-holder")).toBe(true);
      expect(await db.reapSessionTurnLease("taken", dead)).toBe(false);
      expect((await db.getSessionTurnLease("taken"))?.holder).toBe("new-holder");
      // Still dead and still its: reaped, once.
      await db.tryAcquireSessionTurnLease("gone", dead, { ttlSeconds: 60 });
      expect(await db.reapSessionTurnLease("gone", dead)).toBe(true);
      expect(await db.getSessionTurnLease("gone")).toBeNull();
      expect(await db.reapSessionTurnLease("gone", dead)).toBe(false);
    });

    it("a reap wakes the lease's waiters like a release", async () => {
      const db = await store.open({ hostname: HOST, pollIntervalMs: FAR_POLL_MS });
      const dead = holderOn(HOST, deadPid(), "dead");
      // Not provably dead to the waiter's store (it names another host), so the waiter waits.
      const waiterDb = await store.open({ hostname: "elsewhere", pollIntervalMs: FAR_POLL_MS });
      await db.tryAcquireSessionTurnLease("s", dead, { ttlSeconds: 3600 });
      const onWait = vi.fn();
      const admitted = waiterDb.acquireSessionTurnLease("s", "B", { waitSeconds: FAR_WAIT_SECONDS, onWait });
      await until(() => onWait.mock.calls.length > 0, 5_000, "B to wait");
      expect(await db.reapSessionTurnLease("s", dead)).toBe(true);
      // The poll, the lease's expiry and the wait's end are an hour away: only the reap's wake-up
      // admits B before the guard.
      expect(await orStillWaiting(admitted)).toBe(true);
    });
  });

  describe("acquireSessionTurnLease", () => {
    it("readUnderLease: the tip, its row and its transcript are read in the transaction that takes the lease", async () => {
      const transactions = countTransactions();
      try {
        const db = await store.open();
        await db.createSession("root", { source: "t" });
        await db.appendMessage("root", { role: "user", content: "old" });
        await db.endSession("root", "compression");
        await db.createSession("tip", { source: "t", parentSessionId: "root" });
        await db.appendMessagesBatch("tip", [
          { role: "user", content: "hello", platform_message_id: "p1" },
          { role: "assistant", content: "hi" },
        ]);
        // A turn ran here before: the store holds the conversation's tip and transcript.
        expect(await db.acquireSessionTurnLease("root", "W", { readUnderLease: { sessionId: "root", onRead: () => undefined } })).toBe(true);
        await db.releaseSessionTurnLease("root", "W");
        const reads: unknown[] = [];
        transactions.reset();
        expect(await db.acquireSessionTurnLease("root", "A", { readUnderLease: { sessionId: "root", onRead: (read) => reads.push(read) } })).toBe(true);
        expect(transactions.count).toBe(1);
        expect(reads).toEqual([{ sessionId: "tip", sessionExists: true, transcript: await db.getMessagesAsConversation("tip", { repairAlternation: true, includeRowIds: true }) }]);
        expect((reads[0] as { transcript: Array<{ content: string }> }).transcript.map((m) => m.content)).toEqual(["hello", "hi"]);

        // Not taken: nothing read, nothing handed over.
        const onRead = vi.fn();
        expect(await db.acquireSessionTurnLease("root", "B", { waitSeconds: 0, readUnderLease: { sessionId: "root", onRead } })).toBe(false);
        expect(onRead).not.toHaveBeenCalled();

        // A session without a row: its id, no transcript.
        const none = vi.fn();
        expect(await db.acquireSessionTurnLease("unknown", "A", { readUnderLease: { sessionId: "unknown", onRead: none } })).toBe(true);
        expect(none).toHaveBeenCalledWith({ sessionId: "unknown", sessionExists: false, transcript: [] });
      } finally {
        transactions.stop();
      }
    });

    it("readUnderLease with pendingInboxLimit: the head of the conversation's pending inbox is read in the same transaction", async () => {
      const transactions = countTransactions();
      try {
        const db = await store.open();
        await db.createSession("conv", { source: "t" });
        await db.appendMessage("conv", { role: "user", content: "m0" });
        await db.getMessagesAsConversation("conv");
        const rows = [];
        for (const id of ["m1", "m2", "m3"]) rows.push((await db.recordInbound({ platform: "t", platformMessageId: id, sessionId: "conv", payload: { text: id } })).row);
        await db.completeInbox([rows[0].id], "done", "ok");
        const reads: Array<{ pendingInbox?: Array<{ id: number }> }> = [];
        transactions.reset();
        const onRead = (read: { pendingInbox?: Array<{ id: number }> }) => reads.push(read);
        expect(await db.acquireSessionTurnLease("conv", "A", { readUnderLease: { sessionId: "conv", pendingInboxLimit: 1, onRead } })).toBe(true);
        expect(transactions.count).toBe(1);
        expect(reads[0].pendingInbox?.map((r) => r.id)).toEqual([rows[1].id]);
        await db.releaseSessionTurnLease("conv", "A");
        expect(await db.acquireSessionTurnLease("conv", "A", { readUnderLease: { sessionId: "conv", pendingInboxLimit: 5, onRead } })).toBe(true);
        expect(reads[1].pendingInbox?.map((r) => r.id)).toEqual([rows[1].id, rows[2].id]);
        // Without a limit, no inbox read.
        await db.releaseSessionTurnLease("conv", "A");
        expect(await db.acquireSessionTurnLease("conv", "A", { readUnderLease: { sessionId: "conv", onRead } })).toBe(true);
        expect(reads[2].pendingInbox).toBeUndefined();
      } finally {
        transactions.stop();
      }
    });

    it("readUnderLease with an input: stored under the lease after the reads, only for the pending head and only once", async () => {
      const db = await store.open();
      const record = async (id: string) => (await db.recordInbound({ platform: "t", platformMessageId: id, sessionId: "fresh", payload: { text: id } })).row;
      const [first, second] = [await record("m1"), await record("m2")];
      const inputFor = (inboxId: number, platformId: string) => ({
        inboxId,
        message: { role: "user" as const, content: platformId, platform_message_id: platformId, timestamp: 100 },
        session: { source: "t", userId: "u-1" },
      });
      const reads: TurnStartRead[] = [];
      const onRead = (read: TurnStartRead) => reads.push(read);

      // Not the head (m1 is older and pending): nothing stored, no row created.
      expect(await db.acquireSessionTurnLease("fresh", "A", { readUnderLease: { sessionId: "fresh", pendingInboxLimit: 1, input: inputFor(second.id, "m2"), onRead } })).toBe(true);
      expect(reads[0]).toEqual({ sessionId: "fresh", sessionExists: false, transcript: [], pendingInbox: [first] });
      expect(await db.getSession("fresh")).toBeNull();
      await db.releaseSessionTurnLease("fresh", "A");

      // Held by another: not admitted, nothing stored.
      expect(await db.tryAcquireSessionTurnLease("fresh", "B")).toBe(true);
      expect(await db.acquireSessionTurnLease("fresh", "A", { waitSeconds: 0, readUnderLease: { sessionId: "fresh", input: inputFor(first.id, "m1"), onRead } })).toBe(false);
      expect(await db.getSession("fresh")).toBeNull();
      await db.releaseSessionTurnLease("fresh", "B");

      // The head: the row is created and the message stored, after the transcript read.
      expect(await db.acquireSessionTurnLease("fresh", "A", { readUnderLease: { sessionId: "fresh", pendingInboxLimit: 1, input: inputFor(first.id, "m1"), onRead } })).toBe(true);
      const stored = await db.getMessages("fresh");
      expect(stored.map((m) => [m.content, m.platform_message_id, m.timestamp])).toEqual([["m1", "m1", 100]]);
      expect(reads[1]).toEqual({ sessionId: "fresh", sessionExists: true, transcript: [], pendingInbox: [first], inputRowId: stored[0].id });
      expect(await db.getSession("fresh")).toMatchObject({ source: "t", user_id: "u-1", parent_session_id: null });
      await db.releaseSessionTurnLease("fresh", "A");

      // Its platform id stored already (a turn that crashed after admission): not stored twice.
      expect(await db.acquireSessionTurnLease("fresh", "A", { readUnderLease: { sessionId: "fresh", input: inputFor(first.id, "m1"), onRead } })).toBe(true);
      expect(reads[2].inputRowId).toBeUndefined();
      expect(reads[2].transcript.map((m) => m.content)).toEqual(["m1"]);
      expect(await db.getMessages("fresh")).toHaveLength(1);
    });

    it("is admitted at once when free, without onWait or onContended", async () => {
      const db = await store.open();
      const onWait = vi.fn();
      const onContended = vi.fn();
      expect(await db.acquireSessionTurnLease("s", "A", { onWait, onContended })).toBe(true);
      expect(onWait).not.toHaveBeenCalled();
      expect(onContended).not.toHaveBeenCalled();
    });

    it("shouldAbort true before the first attempt returns false without taking the lease", async () => {
      const db = await store.open();
      expect(await db.acquireSessionTurnLease("s", "A", { shouldAbort: () => true })).toBe(false);
      expect(await db.getSessionTurnLease("s")).toBeNull();
    });

    it("an abort raised while waiting ends the wait at the next attempt", async () => {
      const db = await store.open({ pollIntervalMs: 30 });
      await db.tryAcquireSessionTurnLease("s", "A", { ttlSeconds: 60 });
      // Asked before every attempt: the abort is raised at the third, after two polls of waiting.
      let asked = 0;
      const shouldAbort = () => ++asked >= 3;
      expect(await db.acquireSessionTurnLease("s", "B", { waitSeconds: 10, shouldAbort })).toBe(false);
      // Ended there: a wait that ignored it would go on asking every poll until the 10 s ran out.
      expect(asked).toBe(3);
      expect((await db.getSessionTurnLease("s"))?.holder).toBe("A");
    });

    it("onHeldGiveUp: a live holder ends the attempt at once, without onWait; a free or stale lease is taken", async () => {
      const clock = manualClock(1000);
      const db = await store.open({ now: clock.now });
      await db.tryAcquireSessionTurnLease("s", "A", { ttlSeconds: 60 });
      const onWait = vi.fn();
      const onHeldGiveUp = vi.fn();
      // Asked before every attempt: one attempt, no second one after a poll.
      const shouldAbort = vi.fn(() => false);
      expect(await db.acquireSessionTurnLease("s", "B", { waitSeconds: 10, onWait, onHeldGiveUp, shouldAbort })).toBe(false);
      expect(shouldAbort).toHaveBeenCalledTimes(1);
      expect(onHeldGiveUp).toHaveBeenCalledTimes(1);
      expect(onWait).not.toHaveBeenCalled();
      expect((await db.getSessionTurnLease("s"))?.holder).toBe("A");
      clock.advance(61); // A's lease ran out: not a live holder any more
      expect(await db.acquireSessionTurnLease("s", "B", { waitSeconds: 10, onWait, onHeldGiveUp })).toBe(true);
      expect(onHeldGiveUp).toHaveBeenCalledTimes(1);
    });

    it("gives up after waitSeconds with false, having announced the live holder once at elapsed 0", async () => {
      const db = await store.open({ pollIntervalMs: 50 });
      await db.tryAcquireSessionTurnLease("s", "A", { ttlSeconds: 60 });
      const onWait = vi.fn();
      const onContended = vi.fn();
      const started = performance.now();
      expect(await db.acquireSessionTurnLease("s", "B", { waitSeconds: 0.3, onWait, onContended })).toBe(false);
      const elapsed = performance.now() - started;
      // The wait's length is the behaviour: not given up before waitSeconds, and given up then
      // rather than going on (the bound is 10x the 0.3 s, so a busy machine cannot trip it).
      expect(elapsed).toBeGreaterThanOrEqual(290);
      expect(elapsed).toBeLessThan(3_000);
      expect(onWait.mock.calls).toEqual([[0]]);
      expect(onContended).not.toHaveBeenCalled();
    });


    it("two store objects on one database in one process: B waits, A releases, B is admitted at once and reads A's rows", async () => {
      // The poll, A's expiry (60 s) and B's deadline lie past the guard: only the release's
      // wake-up admits B before it.
      const a = await store.open({ pollIntervalMs: FAR_POLL_MS });
      const b = await store.open({ pollIntervalMs: FAR_POLL_MS });
      await a.createSession("shared", { source: "t" });
      expect(await a.acquireSessionTurnLease("shared", "A", { ttlSeconds: 60 })).toBe(true);
      await a.appendMessagesBatch("shared", [{ role: "user", content: "first" }], { turnLeaseHolder: "A" });

      const onWait = vi.fn();
      const shouldAbort = vi.fn(() => false);
      const waiting = b.acquireSessionTurnLease("shared", "B", { ttlSeconds: 60, waitSeconds: FAR_WAIT_SECONDS, onWait, shouldAbort });
      await until(() => onWait.mock.calls.length > 0, 5_000, "B to wait");
      await a.appendMessagesBatch("shared", [{ role: "assistant", content: "first answer" }], { turnLeaseHolder: "A" });
      await a.releaseSessionTurnLease("shared", "A");
      expect(await orStillWaiting(waiting)).toBe(true);
      // Two attempts: the refused one, and the one the release woke.
      expect(shouldAbort).toHaveBeenCalledTimes(2);
      expect(onWait).toHaveBeenCalledTimes(1);
      expect((await b.getMessagesAsConversation("shared")).map((m) => m.content)).toEqual(["first", "first answer"]);
    });

    it("wakes when the current lease runs out, without waiting for the poll", async () => {
      const a = await store.open();
      const b = await store.open({ pollIntervalMs: FAR_POLL_MS });
      await a.tryAcquireSessionTurnLease("s", "A", { ttlSeconds: 0.3 });
      const shouldAbort = vi.fn(() => false);
      // The poll and B's deadline lie past the guard and nobody releases: only the wake-up at A's
      // expiry admits B before it.
      expect(await orStillWaiting(b.acquireSessionTurnLease("s", "B", { waitSeconds: FAR_WAIT_SECONDS, shouldAbort }))).toBe(true);
      expect(shouldAbort).toHaveBeenCalledTimes(2);
    });

    it("admits several waiters one at a time, each on the previous release", async () => {
      const db = await store.open({ pollIntervalMs: 10_000 });
      await db.tryAcquireSessionTurnLease("s", "A", { ttlSeconds: 60 });
      const admitted: string[] = [];
      const onWait = vi.fn();
      const waiters = ["B", "C"].map((holder) =>
        db.acquireSessionTurnLease("s", holder, { waitSeconds: 5, ttlSeconds: 60, onWait }).then((ok) => {
          if (ok) admitted.push(holder);
          return ok;
        }),
      );
      await until(() => onWait.mock.calls.length === 2, 5_000, "both to wait");
      await db.releaseSessionTurnLease("s", "A");
      await until(() => admitted.length === 1, 2000, "first waiter");
      await sleep(30);
      expect(admitted).toHaveLength(1);
      await db.releaseSessionTurnLease("s", admitted[0]);
      await until(() => admitted.length === 2, 2000, "second waiter");
      expect(await Promise.all(waiters)).toEqual([true, true]);
    });

    it("a waiter whose store is closed rejects promptly instead of hanging", async () => {
      const a = await store.open();
      const b = await store.open({ pollIntervalMs: 10_000 });
      await a.tryAcquireSessionTurnLease("s", "A", { ttlSeconds: 60 });
      const onWait = vi.fn();
      const waiting = b.acquireSessionTurnLease("s", "B", { waitSeconds: 30, onWait });
      await until(() => onWait.mock.calls.length > 0);
      await b.close();
      await expect(waiting).rejects.toBeInstanceOf(SessionDBClosedError);
    });
  });
});

// The waiting loop is shared by both backends (lease-admission.ts); fake timers can drive it only
// on SQLite, whose calls need no socket I/O while the fake clock runs.
describe("the waiting loop's notices (SQLite, fake timers)", () => {
  let store: TempStore;
  beforeEach(() => {
    store = tempStore("sb-lease");
  });
  afterEach(async () => {
    vi.useRealTimers();
    await store.cleanup();
  });

  it("repeats onWait at most every 15 s of a long wait", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date", "performance"] });
    const db = store.open({ pollIntervalMs: 1000 });
    await db.tryAcquireSessionTurnLease("s", "A", { ttlSeconds: 3600 });
    const onWait = vi.fn();
    const result = db.acquireSessionTurnLease("s", "B", { waitSeconds: 40, onWait });
    // A second at a time, letting each attempt run (a store may queue its write for the end of the
    // event loop's pass, on a real setImmediate) before the clock moves on.
    for (let second = 0; second < 41; second++) {
      await new Promise((resolve) => setImmediate(resolve));
      await new Promise((resolve) => setImmediate(resolve));
      await vi.advanceTimersByTimeAsync(1_000);
    }
    expect(await result).toBe(false);
    const elapsed = onWait.mock.calls.map(([seconds]) => Math.round(seconds as number));
    expect(elapsed).toEqual([0, 15, 30]);
  });
});

describe("the lease's first read on SQLite (readUnderLease): the write lock held for the lease and the newest rows only", () => {
  let store: TestStore;
  beforeEach(() => {
    store = sqliteBackend.create("lease-read");
  });
  afterEach(async () => {
    await store.cleanup();
  });

  it("a transcript the store does not hold is read before the lease's transaction, which then reads only rows added since", async () => {
    const writer = await store.open();
    await writer.createSession("long", { source: "t" });
    await writer.appendMessagesBatch("long", Array.from({ length: 300 }, (_, i) => ({ role: i % 2 === 0 ? ("user" as const) : ("assistant" as const), content: `m${i}` })));
    const reads = recordReads("long", { rows: TRANSCRIPT_ROWS });
    try {
      const db = await store.open();
      let transcript: Array<{ content: string | null }> = [];
      expect(await db.acquireSessionTurnLease("long", "A", { readUnderLease: { sessionId: "long", onRead: (read) => (transcript = read.transcript) } })).toBe(true);
      expect(transcript.map((m) => m.content)).toEqual(Array.from({ length: 300 }, (_, i) => `m${i}`));
      // Every row came from a read before the lease's transaction; the read under the lease found none new.
      expect(reads.rows).toEqual([
        { read: "rows", underLease: false, rows: 300 },
        { read: "rows", underLease: true, rows: 0 },
      ]);
      await db.releaseSessionTurnLease("long", "A");

      // Rows written meanwhile (by another connection) are read under the lease, after the ones held.
      await writer.appendMessage("long", { role: "user", content: "new" });
      reads.rows.length = 0;
      expect(await db.acquireSessionTurnLease("long", "A", { readUnderLease: { sessionId: "long", onRead: (read) => (transcript = read.transcript) } })).toBe(true);
      expect(transcript.at(-1)?.content).toBe("new");
      expect(reads.rows).toEqual([{ read: "rows", underLease: true, rows: 1 }]);
    } finally {
      reads.stop();
    }
  });

  it("a transcript too long for the store's row cache is read before each lease's transaction, which reads only rows added since", async () => {
    const writer = await store.open();
    await writer.createSession("huge", { source: "t" });
    // About 265 bytes a row: 2,000 rows weigh more than the reader's 256 KiB.
    const transcriptCacheBytes = 256 * 1024;
    const count = 2_000;
    for (let from = 0; from < count; from += 5_000) {
      await writer.appendMessagesBatch("huge", Array.from({ length: Math.min(5_000, count - from) }, (_, i) => ({ role: "user" as const, content: `m${from + i}` })));
    }
    const reads = recordReads("huge", { rows: TRANSCRIPT_ROWS });
    try {
      const db = await store.open({ transcriptCacheBytes });
      let transcript: Array<{ content: string | null }> = [];
      const turn = async (holder: string): Promise<void> => {
        expect(await db.acquireSessionTurnLease("huge", holder, { readUnderLease: { sessionId: "huge", onRead: (read) => (transcript = read.transcript) } })).toBe(true);
        await db.releaseSessionTurnLease("huge", holder);
      };
      await turn("A");
      expect(transcript).toHaveLength(count);
      // A row written meanwhile by another connection: read under the lease, after the rows read ahead.
      await writer.appendMessage("huge", { role: "user", content: "new" });
      await turn("B");
      expect(transcript).toHaveLength(count + 1);
      expect(transcript.at(-1)?.content).toBe("new");
      expect(transcript[0].content).toBe("m0");
      // Too long to keep between turns, so each turn reads it all again, but never under the lock.
      expect(reads.rows).toEqual([
        { read: "rows", underLease: false, rows: count },
        { read: "rows", underLease: true, rows: 0 },
        { read: "rows", underLease: false, rows: count + 1 },
        { read: "rows", underLease: true, rows: 0 },
      ]);
    } finally {
      reads.stop();
    }
  });

  it("under the lock only which images the transcript holds; their bytes after the commit", async () => {
    const db = await store.open();
    await db.createSession("pics", { source: "t" });
    const png = new Uint8Array([137, 80, 78, 71, 1, 2, 3]);
    await db.appendMessagesBatch("pics", [
      { role: "user", content: "look", attachments: [{ content_type: "image/png", name: "a.png", size_bytes: png.byteLength, data: png }] },
      { role: "assistant", content: "a picture" },
    ]);
    await db.getMessagesAsConversation("pics");
    const reads = recordReads("pics", { list: /SELECT id, message_id, content_type, size_bytes, name FROM attachments/, bytes: /SELECT id, message_id, content_type, size_bytes, name, data FROM attachments/ });
    try {
      let transcript: Array<{ content: string | null; attachments?: Array<{ name?: string | null; data?: Uint8Array }> }> = [];
      expect(await db.acquireSessionTurnLease("pics", "A", { readUnderLease: { sessionId: "pics", onRead: (read) => (transcript = read.transcript) } })).toBe(true);
      expect(transcript[0].attachments?.map((a) => [a.name, [...(a.data ?? [])]])).toEqual([["a.png", [...png]]]);
      expect(reads.rows).toEqual([
        { read: "list", underLease: true, rows: 1 },
        { read: "bytes", underLease: false, rows: 1 },
      ]);
      await db.releaseSessionTurnLease("pics", "A");

      // A conversation without images reads no bytes at all.
      await db.createSession("plain", { source: "t" });
      await db.appendMessage("plain", { role: "user", content: "hi" });
      reads.rows.length = 0;
      expect(await db.acquireSessionTurnLease("plain", "A", { readUnderLease: { sessionId: "plain", onRead: () => undefined } })).toBe(true);
      expect(reads.rows.map((r) => r.read)).toEqual(["list"]);
    } finally {
      reads.stop();
    }
  });
});

/**
 * Records the reads (better-sqlite3 `all`) whose SQL matches one of `reads`: which one, the rows
 * it returned, and whether it ran under the lease, i.e. in a transaction that already holds the
 * conversation's lease row (the lease's own transaction; a read outside it cannot see an
 * uncommitted one).
 */
function recordReads(conversationId: string, reads: Record<string, RegExp>): { rows: Array<{ read: string; underLease: boolean; rows: number }>; stop: () => void } {
  const probe = new Database(":memory:");
  const proto = Object.getPrototypeOf(probe.prepare("SELECT 1")) as { all: (this: Statement, ...args: unknown[]) => unknown[] };
  probe.close();
  const original = proto.all;
  const rows: Array<{ read: string; underLease: boolean; rows: number }> = [];
  proto.all = function (this: Statement, ...args: unknown[]) {
    const result = original.apply(this, args);
    const read = Object.keys(reads).find((name) => reads[name].test(this.source));
    if (read) {
      const lease = this.database.prepare("SELECT 1 FROM session_turn_leases WHERE conversation_id = ?").get(conversationId);
      rows.push({ read, underLease: this.database.inTransaction && lease !== undefined, rows: result.length });
    }
    return result;
  };
  return { rows, stop: () => (proto.all = original) };
}

const TRANSCRIPT_ROWS = /FROM messages WHERE session_id = \? AND id > \?/;
