// The gateway's hooks: input read under the lease (the inbox head), end records written in the same
// transaction as the reply, skips, and inputs a crashed turn already stored.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Agent } from "../../src/agent/agent.js";
import type { AdmittedInput } from "../../src/agent/turn-types.js";
import type { SessionStore } from "../../src/state/index.js";
import type { InboxRow } from "../../src/state/types.js";
import { storeBackends, type StoreBackend } from "../support/store-backends.js";
import { liveStore, type LiveStore } from "./support/live-store.js";
import { ScriptedProvider, reply } from "./support/scripted-provider.js";

let live: LiveStore | null = null;
afterEach(async () => {
  await live?.cleanup();
  live = null;
});

let backend: StoreBackend;

async function openDb(): Promise<SessionStore> {
  live = liveStore(backend, "admitted");
  return live.open();
}

async function receive(db: SessionStore, platformMessageId: string, text: string): Promise<InboxRow> {
  const { row } = await db.recordInbound({ platform: "webhook", platformMessageId, sessionId: "s1", payload: { text } });
  return row;
}

/** The gateway's side: take the head of the session's inbox (or several, in collect mode). */
function inboxHead(db: SessionStore, limit = 1): (ctx: { sessionId: string }) => Promise<AdmittedInput | null> {
  return async ({ sessionId }) => {
    const pending = await db.pendingInbox(sessionId, limit);
    if (pending.length === 0) return null;
    return {
      messages: pending.map((row) => ({
        text: String(row.payload.text),
        platformMessageId: row.platform_message_id,
        displayKind: "text",
      })),
      endRecords: ({ status, finalResponse }) => ({
        completeInbox: { ids: pending.map((row) => row.id), reply: finalResponse, status },
        deliveries: [{ platform: "webhook", sessionId, target: { url: "http://127.0.0.1/hook" }, text: finalResponse, inboxId: pending[0].id }],
      }),
    };
  };
}

describe.each(storeBackends)("on $name", (each) => {
  beforeEach(() => {
    backend = each;
  });

  describe("admitted input", () => {
    it("completes the inbox row and records the delivery with the reply, in the turn's last flush", async () => {
      const db = await openDb();
      await db.createSession("s1", { source: "webhook" });
      const row = await receive(db, "evt-1", "hello there");
      const provider = new ScriptedProvider([reply("hi back")]);
      const agent = new Agent({ store: db, provider, sessionId: "s1", platform: "webhook" });

      const result = await agent.runConversation(null, { admittedInput: inboxHead(db) });

      expect(result.completed).toBe(true);
      expect(result.finalResponse).toBe("hi back");
      expect(provider.requests[0].messages.at(-1)).toEqual({ role: "user", content: "hello there" });
      const rows = await db.getMessages("s1");
      expect(rows.map((m) => [m.role, m.content, m.platform_message_id])).toEqual([
        ["user", "hello there", "evt-1"],
        ["assistant", "hi back", null],
      ]);
      expect(await db.getInboxRow(row.id)).toMatchObject({ status: "done", reply: "hi back" });
      const deliveries = await db.deliveriesForSession("s1");
      expect(deliveries.map((d) => [d.text, d.inbox_id, d.status])).toEqual([["hi back", row.id, "pending"]]);
      // The gateway enqueues these.
      expect(result.deliveryIds).toEqual([deliveries[0].id]);
    });

    it("skips when the inbox has nothing pending: no model call, lease released", async () => {
      const db = await openDb();
      await db.createSession("s1", { source: "webhook" });
      const provider = new ScriptedProvider([reply("never")]);
      const agent = new Agent({ store: db, provider, sessionId: "s1", platform: "webhook" });
      let leaseSeenByHook: string | null = null;

      const result = await agent.runConversation(null, {
        admittedInput: async (ctx) => {
          leaseSeenByHook = (await db.getSessionTurnLease("s1"))?.holder ?? null;
          return inboxHead(db)(ctx);
        },
      });

      expect(result).toMatchObject({ completed: true, skipped: true, finalResponse: "" });
      expect(leaseSeenByHook).toMatch(/^pid=/);
      expect(provider.requests).toHaveLength(0);
      expect(await db.getMessages("s1")).toHaveLength(0);
      expect(await db.getSessionTurnLease("s1")).toBeNull();
    });

    it("takes several inputs in one turn (collect mode) and completes them all", async () => {
      const db = await openDb();
      await db.createSession("s1", { source: "webhook" });
      const first = await receive(db, "evt-1", "one");
      const second = await receive(db, "evt-2", "two");
      const provider = new ScriptedProvider([reply("both")]);
      const agent = new Agent({ store: db, provider, sessionId: "s1", platform: "webhook" });

      await agent.runConversation(null, { admittedInput: inboxHead(db, 10) });

      expect(provider.requests[0].messages.filter((m) => m.role === "user").map((m) => m.content)).toEqual(["one", "two"]);
      expect((await db.getMessages("s1")).map((m) => m.content)).toEqual(["one", "two", "both"]);
      expect((await db.getInboxRow(first.id))?.status).toBe("done");
      expect((await db.getInboxRow(second.id))?.status).toBe("done");
    });

    it("records a failed outcome on the inbox row when the model fails", async () => {
      const db = await openDb();
      await db.createSession("s1", { source: "webhook" });
      const row = await receive(db, "evt-1", "hello");
      const agent = new Agent({
        store: db,
        provider: new ScriptedProvider([new Error("model down")]),
        sessionId: "s1",
        platform: "webhook",
      });
      const result = await agent.runConversation(null, { admittedInput: inboxHead(db) });
      expect(result.failed).toBe(true);
      expect(await db.getInboxRow(row.id)).toMatchObject({ status: "failed", reply: result.finalResponse });
    });

    it("does not store or send twice an input a crashed turn already stored (durable history)", async () => {
      const db = await openDb();
      await db.createSession("s1", { source: "webhook" });
      await receive(db, "evt-1", "hello");
      // The crashed turn flushed the user message but never answered.
      await db.appendMessage("s1", { role: "user", content: "hello", platform_message_id: "evt-1" });
      const provider = new ScriptedProvider([reply("answer")]);
      const agent = new Agent({ store: db, provider, sessionId: "s1", platform: "webhook" });

      // No caller history: the transcript is read under the lease.
      const result = await agent.runConversation(null, { admittedInput: inboxHead(db) });

      expect(result.completed).toBe(true);
      expect(provider.requests[0].messages.filter((m) => m.role === "user").map((m) => m.content)).toEqual(["hello"]);
      expect((await db.getMessages("s1")).map((m) => [m.role, m.content])).toEqual([
        ["user", "hello"],
        ["assistant", "answer"],
      ]);
    });

    it("does not store twice an input already stored when the caller's history lacks it", async () => {
      const db = await openDb();
      await db.createSession("s1", { source: "webhook" });
      await receive(db, "evt-1", "hello");
      await db.appendMessage("s1", { role: "user", content: "hello", platform_message_id: "evt-1" });
      const provider = new ScriptedProvider([reply("answer")]);
      const agent = new Agent({ store: db, provider, sessionId: "s1", platform: "webhook" });

      await agent.runConversation(null, { conversationHistory: [], admittedInput: inboxHead(db) });

      // The model still sees the message once; the store keeps one row of it.
      expect(provider.requests[0].messages.filter((m) => m.role === "user").map((m) => m.content)).toEqual(["hello"]);
      expect((await db.getMessages("s1")).map((m) => m.content)).toEqual(["hello", "answer"]);
    });

    it("asks the store whether an input is stored only when its history was not read from the store under the lease", async () => {
      const db = await openDb();
      await db.createSession("s1", { source: "webhook" });
      const asked: string[] = [];
      const original = db.hasPlatformMessageId.bind(db);
      db.hasPlatformMessageId = (sessionId, platformMessageId) => {
        asked.push(platformMessageId);
        return original(sessionId, platformMessageId);
      };
      const provider = new ScriptedProvider([reply("one"), reply("two")]);
      const agent = new Agent({ store: db, provider, sessionId: "s1", platform: "webhook" });

      // No caller history: the whole transcript is read with the lease, so it answers the question.
      await receive(db, "evt-1", "first");
      await agent.runConversation(null, { admittedInput: inboxHead(db) });
      expect(asked).toEqual([]);

      // A caller's history may lack stored messages: the store is asked.
      await receive(db, "evt-2", "second");
      await agent.runConversation(null, { conversationHistory: [], admittedInput: inboxHead(db) });
      expect(asked).toEqual(["evt-2"]);
      expect((await db.getMessages("s1")).map((m) => m.content)).toEqual(["first", "one", "second", "two"]);
    });

    it("hands admittedInput the pending inbox head read in the lease's transaction when asked for it", async () => {
      const db = await openDb();
      await db.createSession("s1", { source: "webhook" });
      const first = await receive(db, "evt-1", "first");
      const second = await receive(db, "evt-2", "second");
      const agent = new Agent({ store: db, provider: new ScriptedProvider([reply("a"), reply("b")]), sessionId: "s1", platform: "webhook" });
      const seen: Array<number[] | undefined> = [];
      const recording = (inner: ReturnType<typeof inboxHead>) => async (ctx: Parameters<ReturnType<typeof inboxHead>>[0] & { pendingInbox?: InboxRow[] }) => {
        seen.push(ctx.pendingInbox?.map((row) => row.id));
        return inner(ctx);
      };
      await agent.runConversation(null, { pendingInboxLimit: 2, admittedInput: recording(inboxHead(db)) });
      await agent.runConversation(null, { admittedInput: recording(inboxHead(db)) });
      expect(seen).toEqual([[first.id, second.id], undefined]);
    });

    it("records the outcome even when the loop throws", async () => {
      const db = await openDb();
      await db.createSession("s1", { source: "webhook" });
      const row = await receive(db, "evt-1", "hello");
      const agent = new Agent({ store: db, provider: new ScriptedProvider(), sessionId: "s1", platform: "webhook" });
      agent.runLoop = async () => {
        throw new Error("bug in the loop");
      };
      const result = await agent.runConversation(null, { admittedInput: inboxHead(db) });
      expect(result.failed).toBe(true);
      expect(result.failureReason).toBe("exception");
      expect((await db.getInboxRow(row.id))?.status).toBe("failed");
      expect((await db.getMessages("s1")).map((m) => m.content)).toEqual(["hello"]);
    });
  });

  describe("beforeRelease", () => {
    it("is awaited after the turn's last event and before the lease is released", async () => {
      const db = await openDb();
      await db.createSession("s1", { source: "webhook" });
      const order: string[] = [];
      const agent = new Agent({
        store: db,
        provider: new ScriptedProvider([reply("done")]),
        sessionId: "s1",
        platform: "webhook",
        onEvent: (event) => {
          if (event.kind === "turn.completed") order.push("turn.completed");
        },
        beforeRelease: async () => {
          await new Promise((r) => setTimeout(r, 30));
          order.push(`beforeRelease:lease ${(await db.getSessionTurnLease("s1")) ? "held" : "free"}`);
        },
      });
      const result = await agent.runConversation("hello", {});
      expect(result.completed).toBe(true);
      expect(order).toEqual(["turn.completed", "beforeRelease:lease held"]);
      expect(await db.getSessionTurnLease("s1")).toBeNull();
    });
  });
});
