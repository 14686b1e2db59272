import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { InboxInsert, KeyedInboxInsert } from "../../src/state/index.js";
import { storeBackends, type TestStore } from "../support/store-backends.js";
import { countTransactions, type TransactionCounter } from "../support/transaction-counter.js";
import { manualClock } from "./helpers.js";

describe.each(storeBackends)("inbox and deliveries on $name", (backend) => {
  let store: TestStore;
  beforeEach(() => {
    store = backend.create("inbox");
  });
  afterEach(async () => {
    await store.cleanup();
  });

  const inbound = (id: string, sessionId = "s", extra: Partial<InboxInsert> = {}): InboxInsert => ({
    platform: "slack",
    platformMessageId: id,
    sessionId,
    payload: { text: `text of ${id}`, attachments: [] },
    ...extra,
  });

  describe("inbox", () => {
    it("records a message once; a redelivery returns the existing row with inserted=false", async () => {
      const db = await store.open({ now: () => 10 });
      const first = await db.recordInbound(inbound("m1"));
      expect(first.inserted).toBe(true);
      expect(first.row).toMatchObject({
        platform: "slack",
        platform_message_id: "m1",
        session_id: "s",
        payload: { text: "text of m1", attachments: [] },
        status: "pending",
        received_at: 10,
        enqueued_at: null,
        completed_at: null,
        reply: null,
        reason: null,
      });
      const again = await db.recordInbound(inbound("m1", "s", { payload: { text: "changed" } }));
      expect(again).toEqual({ inserted: false, row: first.row });
      // Same id on another platform is another message.
      expect((await db.recordInbound({ ...inbound("m1"), platform: "discord" })).inserted).toBe(true);
    });

    it("concurrent duplicates from two connections leave exactly one row", async () => {
      const a = await store.open();
      const b = await store.open();
      const results = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).recordInbound(inbound("dup"))));
      expect(results.filter((r) => r.inserted)).toHaveLength(1);
      expect(new Set(results.map((r) => r.row.id)).size).toBe(1);
      expect((await a.inboxCounts()).pending).toBe(1);
    });

    it("recognises a redelivery forever, across reopen", async () => {
      const first = await store.open();
      await first.recordInbound(inbound("m1"));
      await first.close();
      const second = await store.open();
      expect((await second.recordInbound(inbound("m1"))).inserted).toBe(false);
    });

    describe("group commit (recordInboundBatch)", () => {
      let transactions: TransactionCounter;
      beforeEach(() => {
        transactions = countTransactions();
      });
      afterEach(() => transactions.stop());

      it("records a batch in one transaction, ids in the given order, a duplicate inside the batch answered as one", async () => {
        const db = await store.open({ now: () => 12 });
        const before = await db.recordInbound(inbound("old"));
        transactions.reset();
        const results = await db.recordInboundBatch([inbound("b1"), inbound("b2", "t"), inbound("old"), inbound("b1"), inbound("b3")]);
        expect(transactions.count).toBe(1);
        expect(results.map((r) => [r.row.platform_message_id, r.inserted])).toEqual([
          ["b1", true],
          ["b2", true],
          ["old", false],
          ["b1", false],
          ["b3", true],
        ]);
        expect(results[2].row).toEqual(before.row);
        expect(results[3].row.id).toBe(results[0].row.id);
        const ids = [results[0], results[1], results[4]].map((r) => r.row.id);
        expect([...ids].sort((x, y) => x - y)).toEqual(ids);
        expect(ids[0]).toBeGreaterThan(before.row.id);
        expect(results[1].row).toMatchObject({ session_id: "t", status: "pending", received_at: 12 });
        expect((await db.pendingInbox("s")).map((r) => r.platform_message_id)).toEqual(["old", "b1", "b3"]);
        expect(await db.recordInboundBatch([])).toEqual([]);
      });

      it("keeps each row's images in the batch's transaction, and writes nothing when one row fails", async () => {
        const db = await store.open();
        const image = { content_type: "image/png", name: "a.png", data: new Uint8Array([1, 2, 3]) };
        const [withImage] = await db.recordInboundBatch([inbound("img", "s", { attachments: [image] }), inbound("plain")]);
        expect((await db.inboxAttachments(withImage.row.id)).map((a) => [a.content_type, a.name, [...a.data]])).toEqual([["image/png", "a.png", [1, 2, 3]]]);
        const broken = { content_type: null as unknown as string, data: new Uint8Array([4]) };
        await expect(db.recordInboundBatch([inbound("fine"), inbound("broken", "s", { attachments: [broken] })])).rejects.toThrow();
        expect(await db.findInboxRow("slack", "fine")).toBeNull();
        expect(await db.findInboxRow("slack", "broken")).toBeNull();
        expect((await db.recordInbound(inbound("fine"))).inserted).toBe(true);
      });

      const keyed = (id: string, key: string, newId: string): KeyedInboxInsert => {
        const { sessionId: _unused, ...rest } = inbound(id);
        return { ...rest, sessionForKey: { key, newId, input: { source: "slack", chatId: "C1" } } };
      };

      it("finds or creates a keyed row's session in the batch's transaction: one session per key, rows under its conversation id", async () => {
        const db = await store.open();
        await db.createSession("known", { source: "slack", sessionKey: "slack:old" });
        transactions.reset();
        const results = await db.recordInboundBatch([keyed("k1", "slack:new", "n1"), keyed("k2", "slack:new", "n2"), keyed("k3", "slack:old", "n3"), inbound("plain", "given")]);
        // On PostgreSQL the batch first tries one statement, which writes nothing for a key without a live session.
        expect(transactions.count).toBe(store.backend === "postgres" ? 2 : 1);
        expect(results.map((r) => [r.row.platform_message_id, r.row.session_id, r.inserted])).toEqual([
          ["k1", "n1", true],
          ["k2", "n1", true],
          ["k3", "known", true],
          ["plain", "given", true],
        ]);
        expect(await db.getSession("n1")).toMatchObject({ session_key: "slack:new", source: "slack", chat_id: "C1", ended_at: null });
        expect(await db.getSession("n2")).toBeNull();
        // A redelivery is answered from the existing row, under the session it was first recorded in.
        const [again] = await db.recordInboundBatch([keyed("k3", "slack:elsewhere", "n4")]);
        expect(again).toMatchObject({ inserted: false, row: { id: results[2].row.id, session_id: "known" } });
      });

      it("records a keyed row of a compressed session under the conversation's root; a failed batch creates no session", async () => {
        const db = await store.open();
        await db.createSession("root", { source: "slack", sessionKey: "slack:c" });
        await db.endSession("root", "compression");
        await db.createSession("tip", { source: "slack", parentSessionId: "root" });
        const [row] = await db.recordInboundBatch([keyed("c1", "slack:c", "unused")]);
        expect(row.row.session_id).toBe("root");
        expect(await db.getSession("unused")).toBeNull();

        const broken = { content_type: null as unknown as string, data: new Uint8Array([4]) };
        await expect(db.recordInboundBatch([keyed("lost", "slack:fresh", "f1"), { ...keyed("bad", "slack:fresh", "f2"), attachments: [broken] }])).rejects.toThrow();
        expect(await db.getSession("f1")).toBeNull();
        expect(await db.findInboxRow("slack", "lost")).toBeNull();
      });

      it("gives first messages of one key racing from two stores one session", async () => {
        const [a, b] = [await store.open(), await store.open()];
        const raced = await Promise.all([
          a.recordInboundBatch([keyed("r1", "slack:race", "ra")]),
          b.recordInboundBatch([keyed("r2", "slack:race", "rb")]),
          a.recordInboundBatch([keyed("r3", "slack:race", "rc")]),
        ]);
        expect(new Set(raced.map(([r]) => r.row.session_id)).size).toBe(1);
      });
    });

    it("records rejected messages with their reason; a rejection of an already recorded message changes nothing", async () => {
      const db = await store.open({ now: () => 7 });
      const rejected = await db.recordRejected(inbound("bad"), "text is empty");
      expect(rejected).toMatchObject({ status: "rejected", reason: "text is empty", completed_at: 7 });
      const { row } = await db.recordInbound(inbound("ok"));
      expect(await db.recordRejected(inbound("ok"), "late")).toEqual(row);
      expect(await db.findInboxRow("slack", "bad")).toEqual(rejected);
      expect(await db.findInboxRow("slack", "missing")).toBeNull();
      expect(await db.getInboxRow(999_999)).toBeNull();
    });

    it("lists pending rows oldest first, per session and overall, and marks them enqueued", async () => {
      const clock = manualClock(100);
      const db = await store.open({ now: clock.now });
      const ids: number[] = [];
      for (const [key, session] of [["a1", "A"], ["b1", "B"], ["a2", "A"], ["a3", "A"]] as const) {
        ids.push((await db.recordInbound(inbound(key, session))).row.id);
      }
      expect((await db.pendingInbox("A")).map((r) => r.platform_message_id)).toEqual(["a1", "a2", "a3"]);
      expect((await db.pendingInbox("A", 1)).map((r) => r.platform_message_id)).toEqual(["a1"]);
      expect((await db.listPendingInbox()).map((r) => r.platform_message_id)).toEqual(["a1", "b1", "a2", "a3"]);
      expect(await db.listPendingInbox(2)).toHaveLength(2);
      clock.advance(5);
      await db.markInboxEnqueued([ids[0], ids[1]]);
      expect((await db.getInboxRow(ids[0]))?.enqueued_at).toBe(105);
      expect((await db.getInboxRow(ids[2]))?.enqueued_at).toBeNull();
    });

    it("wakeUpView: the woken row, the conversation's pending head and its live lease holder in one read", async () => {
      const db = await store.open();
      await db.createSession("s", { source: "slack" });
      const m1 = (await db.recordInbound(inbound("m1"))).row;
      const m2 = (await db.recordInbound(inbound("m2"))).row;
      expect(await db.wakeUpView("s", m2.id)).toEqual({ row: m2, head: m1, liveHolder: null });
      await db.completeInbox([m1.id], "done", "ok");
      expect(await db.tryAcquireSessionTurnLease("s", "holder-A", { ttlSeconds: 60 })).toBe(true);
      const view = await db.wakeUpView("s", m1.id);
      expect(view.row).toMatchObject({ id: m1.id, status: "done" });
      expect(view.head?.id).toBe(m2.id);
      expect(view.liveHolder).toBe("holder-A");
      await db.releaseSessionTurnLease("s", "holder-A");
      await db.completeInbox([m2.id], "done", "ok");
      expect(await db.wakeUpView("s", null)).toEqual({ row: null, head: null, liveHolder: null });
      expect((await db.wakeUpView("s", 999_999)).row).toBeNull();
    });

    it("releaseSessionTurnLeaseAndReadHead: frees the lease and reads the pending head in the same step", async () => {
      const db = await store.open();
      await db.createSession("s", { source: "slack" });
      const m1 = (await db.recordInbound(inbound("m1"))).row;
      const m2 = (await db.recordInbound(inbound("m2"))).row;
      expect(await db.tryAcquireSessionTurnLease("s", "holder-A", { ttlSeconds: 60 })).toBe(true);
      await db.completeInbox([m1.id], "done", "ok");
      // Another holder's release frees nothing, and still reads the head.
      expect(await db.releaseSessionTurnLeaseAndReadHead("s", "holder-B")).toEqual(m2);
      expect((await db.wakeUpView("s", null)).liveHolder).toBe("holder-A");
      const released = new Promise<void>((resolve) => db.onSessionTurnLeaseReleased("s", resolve));
      expect(await db.releaseSessionTurnLeaseAndReadHead("s", "holder-A")).toEqual(m2);
      await released; // announced like any release
      expect(await db.getSessionTurnLease("s")).toBeNull();
      await db.completeInbox([m2.id], "done", "ok");
      expect(await db.releaseSessionTurnLeaseAndReadHead("s", "holder-A")).toBeNull();
    });

    it("finds the head of each conversation no lease covers once it is old enough", async () => {
      const clock = manualClock(100);
      const db = await store.open({ now: clock.now });
      const a1 = (await db.recordInbound(inbound("a1", "A"))).row.id;
      await db.recordInbound(inbound("a2", "A"));
      const b1 = (await db.recordInbound(inbound("b1", "B"))).row.id;
      await db.recordInbound(inbound("c1", "C"));
      clock.advance(10);
      await db.recordInbound(inbound("d1", "D"));
      expect(await db.tryAcquireSessionTurnLease("C", "holder-c", { ttlSeconds: 60 })).toBe(true);
      await db.completeInbox([b1], "done", "ok");
      // D's row is 0 s old, C is leased, B is answered: A's head alone, once.
      expect(await db.unclaimedPendingHeads(5, 100)).toEqual([{ conversationId: "A", inboxId: a1 }]);
      expect(await db.unclaimedPendingHeads(0, 100)).toEqual([
        { conversationId: "A", inboxId: a1 },
        { conversationId: "D", inboxId: expect.any(Number) },
      ]);
      expect(await db.unclaimedPendingHeads(0, 1)).toHaveLength(1);
      expect(await db.unclaimedPendingHeads(60, 100)).toEqual([]);
      // Even an expired lease counts as covered: turn recovery reaps and wakes those itself.
      clock.advance(120);
      expect((await db.unclaimedPendingHeads(0, 100)).map((h) => h.conversationId)).toEqual(["A", "D"]);
    });

    it("completes only pending rows, and counts every status", async () => {
      const db = await store.open({ now: () => 9 });
      const a = (await db.recordInbound(inbound("a"))).row.id;
      const b = (await db.recordInbound(inbound("b"))).row.id;
      await db.recordInbound(inbound("c"));
      await db.recordRejected(inbound("d"), "too long");
      await db.completeInbox([a], "done", "the reply");
      await db.completeInbox([a, b], "failed", null, "model error");
      expect(await db.getInboxRow(a)).toMatchObject({ status: "done", reply: "the reply", reason: null, completed_at: 9 });
      expect(await db.getInboxRow(b)).toMatchObject({ status: "failed", reply: null, reason: "model error" });
      expect((await db.pendingInbox("s")).map((r) => r.platform_message_id)).toEqual(["c"]);
      expect(await db.inboxCounts()).toEqual({ pending: 1, done: 1, failed: 1, interrupted: 0, rejected: 1 });
    });
  });

  describe("deliveries", () => {
    const target = { channel: "C1", thread_ts: "1.2" };

    it("creates pending rows in order", async () => {
      const db = await store.open({ now: () => 3 });
      const ids = await db.createDeliveries([
        { platform: "slack", sessionId: "s", target, text: "one" },
        { platform: "slack", sessionId: "s", target, text: "two" },
      ]);
      expect(ids[1]).toBeGreaterThan(ids[0]);
      expect(await db.getDelivery(ids[0])).toEqual({
        id: ids[0],
        platform: "slack",
        session_id: "s",
        inbox_id: null,
        target,
        text: "one",
        status: "pending",
        attempts: 0,
        possible_duplicate: false,
        platform_message_id: null,
        last_error: null,
        display_metadata: null,
        created_at: 3,
        updated_at: 3,
      });
      expect(await db.getDelivery(ids[1] + 100)).toBeNull();
    });

    it("claim: pending -> sending; found 'sending' (a crash mid-send) -> claimed again as a possible duplicate; sent -> null", async () => {
      const db = await store.open();
      const [id] = await db.createDeliveries([{ platform: "slack", sessionId: "s", target, text: "hi" }]);
      expect(await db.claimDelivery(id)).toMatchObject({ status: "sending", attempts: 1, possible_duplicate: false });
      expect(await db.claimDelivery(id)).toMatchObject({ status: "sending", attempts: 2, possible_duplicate: true });
      await db.markDeliverySent(id, "1712.0001");
      expect(await db.getDelivery(id)).toMatchObject({ status: "sent", platform_message_id: "1712.0001", possible_duplicate: true });
      expect(await db.claimDelivery(id)).toBeNull();
      expect(await db.claimDelivery(id + 1)).toBeNull();
    });

    it("with reclaimAfterSeconds, a row another claim left in 'sending' is taken only once that claim is that old", async () => {
      const clock = manualClock();
      const db = await store.open({ now: clock.now });
      const [id] = await db.createDeliveries([{ platform: "slack", sessionId: "s", target, text: "hi" }]);
      expect(await db.claimDelivery(id, { reclaimAfterSeconds: 5 })).toMatchObject({ status: "sending", attempts: 1, possible_duplicate: false });
      clock.advance(4.5);
      // A claim 4.5 s old may be a send still in flight: refused, the row untouched.
      expect(await db.claimDelivery(id, { reclaimAfterSeconds: 5 })).toBeNull();
      expect(await db.getDelivery(id)).toMatchObject({ status: "sending", attempts: 1, possible_duplicate: false });
      clock.advance(0.5);
      expect(await db.claimDelivery(id, { reclaimAfterSeconds: 5 })).toMatchObject({ status: "sending", attempts: 2, possible_duplicate: true });
      // A pending row is taken at once whatever the option; a sent one never.
      await db.markDeliveryFailed(id, "503", false);
      expect(await db.claimDelivery(id, { reclaimAfterSeconds: 5 })).toMatchObject({ status: "sending", attempts: 3 });
      await db.markDeliverySent(id, "1712.0002");
      clock.advance(60);
      expect(await db.claimDelivery(id, { reclaimAfterSeconds: 5 })).toBeNull();
    });

    it("a row inserted claimed is its first attempt's claim: taken by no other sender until that claim is old, never given an edit target", async () => {
      const clock = manualClock();
      const db = await store.open({ now: clock.now });
      const [claimed, plain] = await db.createDeliveries([
        { platform: "webhook", sessionId: "s", target, text: "sent by its writer", claimed: true },
        { platform: "webhook", sessionId: "s", target, text: "claimed later" },
      ]);
      expect(await db.getDelivery(claimed)).toMatchObject({ status: "sending", attempts: 1, possible_duplicate: false, updated_at: clock.value() });
      expect(await db.getDelivery(plain)).toMatchObject({ status: "pending", attempts: 0 });
      expect(await db.setDeliveryEditTarget(claimed, "1712.0009")).toBe(false);
      // Its writer's send may be in flight: refused, the row untouched.
      clock.advance(4.5);
      expect(await db.claimDelivery(claimed, { reclaimAfterSeconds: 5 })).toBeNull();
      // Its writer died before recording the send: taken again as a possible duplicate.
      clock.advance(0.5);
      expect(await db.claimDelivery(claimed, { reclaimAfterSeconds: 5 })).toMatchObject({ status: "sending", attempts: 2, possible_duplicate: true });
      // The usual end: the writer records its send.
      const [again] = await db.createDeliveries([{ platform: "webhook", sessionId: "s", target, text: "sent at once", claimed: true }]);
      await db.markDeliverySent(again, "dlv_1");
      expect(await db.getDelivery(again)).toMatchObject({ status: "sent", attempts: 1, possible_duplicate: false, platform_message_id: "dlv_1" });
    });

    it("two connections claiming one delivery at once: one clean claim, the other a possible duplicate; none once sent", async () => {
      const a = await store.open();
      const b = await store.open();
      const [id] = await a.createDeliveries([{ platform: "slack", sessionId: "s", target, text: "hi" }]);
      const claims = await Promise.all([a.claimDelivery(id), b.claimDelivery(id)]);
      expect(claims.map((claim) => claim?.attempts).sort()).toEqual([1, 2]);
      expect(claims.map((claim) => claim?.possible_duplicate).sort()).toEqual([false, true]);
      await a.markDeliverySent(id, "m-1");
      expect(await Promise.all([a.claimDelivery(id), b.claimDelivery(id)])).toEqual([null, null]);
    });

    it("a failed attempt goes back to pending for a retry; a final failure ends it; a sent row never regresses", async () => {
      const db = await store.open();
      const [retry, sent] = await db.createDeliveries([
        { platform: "slack", sessionId: "s", target, text: "a" },
        { platform: "slack", sessionId: "s", target, text: "b" },
      ]);
      await db.claimDelivery(retry);
      await db.markDeliveryFailed(retry, "429 rate limited", false);
      expect(await db.getDelivery(retry)).toMatchObject({ status: "pending", last_error: "429 rate limited", possible_duplicate: false });
      expect(await db.claimDelivery(retry)).toMatchObject({ status: "sending", attempts: 2, possible_duplicate: false });
      await db.markDeliveryFailed(retry, "channel_not_found", true);
      expect(await db.getDelivery(retry)).toMatchObject({ status: "failed", last_error: "channel_not_found" });
      expect(await db.claimDelivery(retry)).toBeNull();

      await db.claimDelivery(sent);
      await db.markDeliverySent(sent, null);
      await db.markDeliveryFailed(sent, "late timeout report", false);
      expect((await db.getDelivery(sent))?.status).toBe("sent");
    });

    it("lists unsent rows (pending and sending) and a session's rows", async () => {
      const db = await store.open();
      const { row } = await db.recordInbound(inbound("m1", "s1"));
      const [a, b, c] = await db.createDeliveries([
        { platform: "slack", sessionId: "s1", target, text: "a", inboxId: row.id },
        { platform: "slack", sessionId: "s1", target, text: "b" },
        { platform: "discord", sessionId: "s2", target: { channel_id: "9" }, text: "c" },
      ]);
      await db.claimDelivery(b);
      await db.claimDelivery(c);
      await db.markDeliverySent(c, "msg-9");
      expect((await db.listUnsentDeliveries()).map((d) => [d.id, d.status])).toEqual([
        [a, "pending"],
        [b, "sending"],
      ]);
      expect(await db.listUnsentDeliveries(1)).toHaveLength(1);
      expect((await db.deliveriesForSession("s1")).map((d) => d.id)).toEqual([a, b]);
      expect((await db.getDelivery(a))?.inbox_id).toBe(row.id);
    });
  });
    it("receipts: found by the platform's message id, shown in display_metadata, never moving back, first time kept", async () => {
      let now = 10;
      const db = await store.open({ now: () => now });
      const [a, b] = await db.createDeliveries([
        { platform: "whatsapp", sessionId: "s", target: { to: "1555" }, text: "a" },
        { platform: "whatsapp", sessionId: "s", target: { to: "1555" }, text: "b" },
      ]);
      await db.claimDelivery(a);
      await db.markDeliverySent(a, "wamid.A");
      await db.claimDelivery(b);
      await db.markDeliverySent(b, "wamid.B");

      expect(await db.recordDeliveryReceipt("whatsapp", "wamid.unknown", { status: "sent", at: 100 })).toBeNull();
      // The same id on another platform is another message.
      expect(await db.recordDeliveryReceipt("slack", "wamid.A", { status: "sent", at: 100 })).toBeNull();

      now = 11;
      const sent = await db.recordDeliveryReceipt("whatsapp", "wamid.A", { status: "sent", at: 100 });
      expect(sent).toMatchObject({ id: a, status: "sent", display_metadata: { receipt: "sent", receipts: { sent: 100 } }, updated_at: 11 });
      // Out of order: read arrives before delivered; the shown status stays read.
      await db.recordDeliveryReceipt("whatsapp", "wamid.A", { status: "read", at: 102 });
      await db.recordDeliveryReceipt("whatsapp", "wamid.A", { status: "delivered", at: 101 });
      // A repeated report keeps the first time.
      await db.recordDeliveryReceipt("whatsapp", "wamid.A", { status: "sent", at: 150 });
      expect((await db.getDelivery(a))?.display_metadata).toEqual({ receipt: "read", receipts: { sent: 100, delivered: 101, read: 102 } });
      // The row's own status is the ledger's: still sent.
      expect((await db.getDelivery(a))?.status).toBe("sent");

      const errors = [{ code: 131026, title: "Message undeliverable" }];
      await db.recordDeliveryReceipt("whatsapp", "wamid.B", { status: "failed", at: 200, errors });
      expect((await db.getDelivery(b))?.display_metadata).toEqual({ receipt: "failed", receipts: { failed: 200 }, receipt_errors: errors });
      expect((await db.getDelivery(a))?.display_metadata).toMatchObject({ receipt: "read" });
    });
});
