import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { TurnLeaseLostError } from "../../src/state/index.js";
import { storeBackends, type TestStore } from "../support/store-backends.js";
import { contents, manualClock } from "./helpers.js";

describe.each(storeBackends)("fencing on $name", (backend) => {
  let store: TestStore;
  beforeEach(() => {
    store = backend.create("fence");
  });
  afterEach(async () => {
    await store.cleanup();
  });

  async function lostError(promise: Promise<unknown>): Promise<TurnLeaseLostError> {
    const err = await promise.then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(TurnLeaseLostError);
    return err as TurnLeaseLostError;
  }

  describe("fenced appends", () => {
    it("writes without any check when no holder is given, even while someone else holds the lease", async () => {
      const db = await store.open();
      await db.createSession("s", { source: "t" });
      await db.tryAcquireSessionTurnLease("s", "A");
      await db.appendMessagesBatch("s", [{ role: "user", content: "unfenced" }]);
      await db.appendMessagesBatch("s", [{ role: "user", content: "null holder" }], { turnLeaseHolder: null });
      expect(contents(await db.getMessages("s"))).toEqual(["unfenced", "null holder"]);
    });

    it("a missing lease row rejects the whole batch with TurnLeaseLostError (cause 'turn_lease')", async () => {
      const db = await store.open();
      await db.createSession("s", { source: "t" });
      const err = await lostError(
        db.appendMessagesBatch("s", [{ role: "user", content: "a" }, { role: "assistant", content: "b" }], { turnLeaseHolder: "A" }),
      );
      expect(err.code).toBe("turn_lease");
      expect(err.cause).toBe("turn_lease");
      expect(err.currentHolder).toBeNull();
      expect(await db.getMessages("s")).toEqual([]);
    });

    it("another holder's lease rejects the batch and its end records: no messages, inbox untouched, no deliveries", async () => {
      const db = await store.open();
      await db.createSession("s", { source: "t" });
      const { row } = await db.recordInbound({ platform: "slack", platformMessageId: "m1", sessionId: "s", payload: { text: "q" } });
      await db.tryAcquireSessionTurnLease("s", "B");
      const err = await lostError(
        db.flushTurn("s", [{ role: "user", content: "q" }, { role: "assistant", content: "answer" }], {
          turnLeaseHolder: "A",
          endRecords: {
            completeInbox: { ids: [row.id], reply: "answer" },
            deliveries: [{ platform: "slack", sessionId: "s", target: { channel: "C1" }, text: "answer", inboxId: row.id }],
          },
        }),
      );
      expect(err.currentHolder).toBe("B");
      expect(await db.getMessages("s")).toEqual([]);
      expect((await db.getInboxRow(row.id))?.status).toBe("pending");
      expect(await db.deliveriesForSession("s")).toEqual([]);
    });

    it("the holder's flush writes messages, completes its inbox rows and records deliveries in one go", async () => {
      const db = await store.open({ now: () => 50 });
      await db.createSession("s", { source: "t" });
      const { row } = await db.recordInbound({ platform: "slack", platformMessageId: "m1", sessionId: "s", payload: { text: "q" } });
      await db.tryAcquireSessionTurnLease("s", "A");
      const result = await db.flushTurn("s", [{ role: "user", content: "q" }, { role: "assistant", content: "answer" }], {
        turnLeaseHolder: "A",
        endRecords: {
          completeInbox: { ids: [row.id], reply: "answer" },
          deliveries: [{ platform: "slack", sessionId: "s", target: { channel: "C1" }, text: "answer", inboxId: row.id }],
        },
      });
      const messages = await db.getMessages("s");
      expect(result.messageIds).toEqual(messages.map((m) => m.id));
      expect(await db.getInboxRow(row.id)).toMatchObject({ status: "done", reply: "answer", completed_at: 50 });
      const deliveries = await db.deliveriesForSession("s");
      expect(deliveries.map((d) => d.id)).toEqual(result.deliveryIds);
      expect(deliveries[0]).toMatchObject({ status: "pending", text: "answer", inbox_id: row.id, target: { channel: "C1" } });
    });

    it("an expired lease still held by the writer is renewed and the write goes through", async () => {
      const clock = manualClock(1000);
      const db = await store.open({ now: clock.now });
      await db.createSession("s", { source: "t" });
      await db.tryAcquireSessionTurnLease("s", "A", { ttlSeconds: 10 });
      clock.advance(60);
      await db.appendMessagesBatch("s", [{ role: "assistant", content: "slow but still mine" }], { turnLeaseHolder: "A" });
      expect(contents(await db.getMessages("s"))).toEqual(["slow but still mine"]);
      expect(await db.getSessionTurnLease("s")).toMatchObject({ holder: "A", expires_at: 1070 });
      // Renewed: a newcomer cannot take it now.
      expect(await db.tryAcquireSessionTurnLease("s", "B")).toBe(false);
    });

    it("once the expired lease was taken over, the old holder's write is rejected", async () => {
      const clock = manualClock(1000);
      const db = await store.open({ now: clock.now });
      await db.createSession("s", { source: "t" });
      await db.tryAcquireSessionTurnLease("s", "A", { ttlSeconds: 10 });
      clock.advance(11);
      expect(await db.tryAcquireSessionTurnLease("s", "B", { ttlSeconds: 10 })).toBe(true);
      await db.appendMessagesBatch("s", [{ role: "user", content: "B's turn" }], { turnLeaseHolder: "B" });
      await lostError(db.appendMessagesBatch("s", [{ role: "assistant", content: "A, too late" }], { turnLeaseHolder: "A" }));
      expect(contents(await db.getMessages("s"))).toEqual(["B's turn"]);
    });

    it("fences a tip by its conversation's lease", async () => {
      const db = await store.open();
      await db.createSession("root", { source: "t" });
      await db.endSession("root", "compression");
      await db.createSession("tip", { source: "t", parentSessionId: "root" });
      await db.tryAcquireSessionTurnLease("root", "A");
      await db.appendMessagesBatch("tip", [{ role: "user", content: "on the tip" }], { turnLeaseHolder: "A" });
      await lostError(db.appendMessagesBatch("tip", [{ role: "user", content: "intruder" }], { turnLeaseHolder: "B" }));
      expect(contents(await db.getMessages("tip"))).toEqual(["on the tip"]);
    });

    it("an empty fenced batch is a lease check: it succeeds for the holder and throws for anyone else", async () => {
      const db = await store.open();
      await db.tryAcquireSessionTurnLease("s", "A");
      expect(await db.appendMessagesBatch("s", [], { turnLeaseHolder: "A" })).toEqual([]);
      await lostError(db.appendMessagesBatch("s", [], { turnLeaseHolder: "B" }));
    });

    // Store-level port of the seed's test_flush_messages_to_session_db_fences_stale_holder_on_live_db:
    // A loses, B acquires, A's late flush is rejected; the transcript stays as B left it.
    it("fences a stale holder on a live database (A loses / B acquires / A late flush)", async () => {
      const first = await store.open();
      const second = await store.open();
      await first.createSession("shared", { source: "test" });
      const staleHolder = "pid=1:turn=stale";
      const nextHolder = "pid=2:turn=next";
      expect(await first.tryAcquireSessionTurnLease("shared", staleHolder, { ttlSeconds: 5 })).toBe(true);

      await first.appendMessagesBatch("shared", [{ role: "user", content: "stale-owned" }], { turnLeaseHolder: staleHolder });
      expect(contents(await first.getMessages("shared"))).toEqual(["stale-owned"]);

      await first.releaseSessionTurnLease("shared", staleHolder);
      expect(await second.tryAcquireSessionTurnLease("shared", nextHolder, { ttlSeconds: 5 })).toBe(true);

      const late = [{ role: "assistant" as const, content: "late stale reply" }];
      const err = await lostError(first.appendMessagesBatch("shared", late, { turnLeaseHolder: staleHolder }));
      expect(err.cause).toBe("turn_lease");
      expect(contents(await second.getMessages("shared"))).toEqual(["stale-owned"]);

      await first.appendMessagesBatch("shared", late, { turnLeaseHolder: nextHolder });
      expect(contents(await second.getMessages("shared"))).toEqual(["stale-owned", "late stale reply"]);
      await second.releaseSessionTurnLease("shared", nextHolder);
    });
  });
});
