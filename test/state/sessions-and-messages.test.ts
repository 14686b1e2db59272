import Database from "better-sqlite3";
import { existsSync } from "node:fs";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SessionDB, UnknownSessionError, type ConversationMessage, type SessionStore } from "../../src/state/index.js";
import { LATEST_SCHEMA_VERSION } from "../../src/state/migrations.js";
import { storeBackends, type TestStore } from "../support/store-backends.js";
import { contents, manualClock, tempStore, type TempStore } from "./helpers.js";

// File-level details of the SQLite backend (PostgreSQL's schema and migrations: postgres-store.test.ts).
describe("opening the SQLite database", () => {
  let store: TempStore;
  beforeEach(() => {
    store = tempStore();
  });
  afterEach(async () => {
    await store.cleanup();
  });

  it("creates parent folders, turns on WAL, synchronous=NORMAL, foreign keys, and migrates to the latest version", async () => {
    const db = store.open();
    expect(existsSync(store.path)).toBe(true);
    await db.close();
    const raw = new Database(store.path);
    try {
      expect(raw.pragma("journal_mode", { simple: true })).toBe("wal");
      expect(raw.pragma("user_version", { simple: true })).toBe(LATEST_SCHEMA_VERSION);
      const tables = raw.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all();
      expect(tables).toEqual(expect.arrayContaining(["sessions", "messages", "session_turn_leases", "inbox", "deliveries"]));
    } finally {
      raw.close();
    }
  });

  it("applies per-connection pragmas: synchronous NORMAL, foreign keys on, a short busy timeout", () => {
    const db = store.open({ busyTimeoutMs: 25 });
    // Reach the connection the way a debugger would: the pragmas are per connection.
    const connection = (db as unknown as { db: Database.Database }).db;
    expect(connection.pragma("synchronous", { simple: true })).toBe(1);
    expect(connection.pragma("foreign_keys", { simple: true })).toBe(1);
    expect(connection.pragma("busy_timeout", { simple: true })).toBe(25);
  });

  it("keeps data across reopen and does not migrate twice", async () => {
    const first = store.open();
    await first.createSession("s1", { source: "test" });
    await first.appendMessage("s1", { role: "user", content: "kept" });
    await first.close();
    const second = store.open();
    expect(contents(await second.getMessages("s1"))).toEqual(["kept"]);
  });

  it("finds a conversation's pending rows by an index of pending rows alone, also in a database made before that index", async () => {
    const first = store.open();
    await first.createSession("s1", { source: "test" });
    const rows = [];
    for (const id of ["m1", "m2", "m3", "m4"]) rows.push((await first.recordInbound({ platform: "t", platformMessageId: id, sessionId: "s1", payload: { text: id }, receivedAt: 1 })).row.id);
    await first.completeInbox([rows[0], rows[2]], "done", "answered");
    await first.close();
    // As version 3 left it: every row's (session, status, id) in one index, no pairings or usage.
    const old = new Database(store.path);
    old.exec("DROP INDEX inbox_session_pending; CREATE INDEX inbox_session_status ON inbox (session_id, status, id); DROP TABLE pairings; DROP TABLE turn_usage;");
    old.pragma("user_version = 3");
    old.close();

    const upgraded = store.open();
    expect((await upgraded.pendingInbox("s1", 10)).map((row) => row.id)).toEqual([rows[1], rows[3]]);
    await upgraded.completeInbox([rows[1]], "done", "answered");
    expect((await upgraded.pendingInbox("s1", 1)).map((row) => row.id)).toEqual([rows[3]]);
    await upgraded.close();
    const raw = new Database(store.path, { readonly: true });
    try {
      expect(raw.pragma("user_version", { simple: true })).toBe(LATEST_SCHEMA_VERSION);
      const indexes = raw.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'inbox' AND sql IS NOT NULL ORDER BY name").pluck().all();
      expect(indexes).toEqual(["inbox_pending", "inbox_session_pending"]);
      const plan = raw.prepare("EXPLAIN QUERY PLAN SELECT * FROM inbox WHERE session_id = ? AND status = 'pending' ORDER BY id LIMIT 1").all("s1") as Array<{ detail: string }>;
      expect(plan.map((step) => step.detail).join(" ")).toContain("USING INDEX inbox_session_pending");
      // Only the pending row is in it: the done ones left it at their completion.
      expect(raw.prepare("SELECT count(*) FROM inbox INDEXED BY inbox_session_pending WHERE session_id = 's1' AND status = 'pending'").pluck().get()).toBe(1);
    } finally {
      raw.close();
    }
  });

  it("refuses a database written by a newer schema", async () => {
    const db = store.open();
    await db.close();
    const raw = new Database(store.path);
    raw.pragma(`user_version = ${LATEST_SCHEMA_VERSION + 1}`);
    raw.close();
    expect(() => new SessionDB(store.path)).toThrow(/newer than this build/);
  });
});

describe.each(storeBackends)("sessions and messages on $name", (backend) => {
  let store: TestStore;
  beforeEach(() => {
    store = backend.create("sessions");
  });
  afterEach(async () => {
    await store.cleanup();
  });

  describe("sessions", () => {
    it("createSession returns the row, and a second create of the same id returns the existing row", async () => {
      const db = await store.open({ now: () => 100 });
      const created = await db.createSession("s1", { source: "slack", chatId: "C1", title: "first" });
      expect(created).toMatchObject({ id: "s1", source: "slack", chat_id: "C1", title: "first", started_at: 100, ended_at: null });
      const again = await db.createSession("s1", { source: "discord", title: "second" });
      expect(again).toEqual(created);
    });

    it("concurrent first creates of one id from two connections give one row", async () => {
      const a = await store.open();
      const b = await store.open();
      const rows = await Promise.all([a, b, a, b].map((db, i) => db.createSession("race", { source: `src${i}` })));
      expect(new Set(rows.map((row) => row.source)).size).toBe(1);
      expect(await a.listSessions()).toHaveLength(1);
    });

    it("getSession is null for an unknown id; endSession records the reason once", async () => {
      const clock = manualClock(10);
      const db = await store.open({ now: clock.now });
      expect(await db.getSession("nope")).toBeNull();
      await db.createSession("s1", { source: "test" });
      clock.advance(5);
      await db.endSession("s1", "reset");
      clock.advance(5);
      await db.endSession("s1", "compression");
      expect(await db.getSession("s1")).toMatchObject({ ended_at: 15, end_reason: "reset" });
    });

    it("listSessions orders by newest activity and reports last_activity (null without messages)", async () => {
      const clock = manualClock(1000);
      const db = await store.open({ now: clock.now });
      await db.createSession("old", { source: "t" });
      clock.advance(10);
      await db.createSession("new", { source: "t" });
      clock.advance(10);
      await db.appendMessage("old", { role: "user", content: "bump" });
      const listed = await db.listSessions();
      expect(listed.map((s) => [s.id, s.last_activity])).toEqual([
        ["old", 1020],
        ["new", null],
      ]);
      expect(await db.listSessions({ limit: 1 })).toHaveLength(1);
    });

    it("ensureSessionForKey creates once per key, even when first messages race, and starts anew after a reset", async () => {
      const a = await store.open();
      const b = await store.open();
      const raced = await Promise.all([
        a.ensureSessionForKey("slack:C1", "id-a", { source: "slack" }),
        b.ensureSessionForKey("slack:C1", "id-b", { source: "slack" }),
        a.ensureSessionForKey("slack:C1", "id-c", { source: "slack" }),
      ]);
      expect(new Set(raced.map((row) => row.id)).size).toBe(1);
      expect(raced[0].session_key).toBe("slack:C1");
      await a.endSession(raced[0].id, "reset");
      const fresh = await b.ensureSessionForKey("slack:C1", "id-d", { source: "slack" });
      expect(fresh.id).toBe("id-d");
    });

    it("ensureSessionForKey follows a compressed session to its live tip", async () => {
      const db = await store.open();
      await db.ensureSessionForKey("k", "root", { source: "t" });
      await db.endSession("root", "compression");
      await db.createSession("tip", { source: "t", parentSessionId: "root" });
      expect((await db.ensureSessionForKey("k", "other", { source: "t" })).id).toBe("tip");
    });

    it("ensureSessionForKey starts anew once a compressed session's tip has ended, and then prefers the open session", async () => {
      const db = await store.open();
      await db.ensureSessionForKey("k", "root", { source: "t" });
      await db.endSession("root", "compression");
      await db.createSession("tip", { source: "t", parentSessionId: "root" });
      await db.endSession("tip", "reset");
      const fresh = await db.ensureSessionForKey("k", "fresh", { source: "t" });
      expect([fresh.id, fresh.session_key, fresh.ended_at]).toEqual(["fresh", "k", null]);
      // The open session wins over the older compressed one, whose tip has ended.
      expect((await db.ensureSessionForKey("k", "other", { source: "t" })).id).toBe("fresh");
      expect(await db.getSession("other")).toBeNull();
    });
  });

  describe("compression lineage", () => {
    async function chain(db: SessionStore): Promise<void> {
      // root -(compression)-> mid -(compression)-> tip ; tip -(reset)-> after (a new conversation)
      await db.createSession("root", { source: "t" });
      await db.endSession("root", "compression");
      await db.createSession("mid", { source: "t", parentSessionId: "root" });
      await db.endSession("mid", "compression");
      await db.createSession("tip", { source: "t", parentSessionId: "mid" });
      await db.endSession("tip", "reset");
      await db.createSession("after", { source: "t", parentSessionId: "tip" });
    }

    it("the conversation id (the lease is keyed by it) is the same for every session of a compression chain", async () => {
      const db = await store.open();
      await chain(db);
      for (const id of ["root", "mid", "tip"]) expect(await db.conversationIdOf(id)).toBe("root");
      // The parent ended with 'reset', not 'compression': a new conversation starts here.
      expect(await db.conversationIdOf("after")).toBe("after");
      // A session with no row yet is its own root.
      expect(await db.conversationIdOf("client-id")).toBe("client-id");
    });

    it("a root read earlier follows rows created later and parents compressed later", async () => {
      const db = await store.open();
      await db.createSession("p", { source: "t" });
      expect(await db.conversationIdOf("late")).toBe("late");
      expect(await db.conversationIdOf("p")).toBe("p");
      await db.createSession("c", { source: "t", parentSessionId: "p" });
      // The parent has not ended yet: the child is its own root until the parent ends in compression.
      expect(await db.conversationIdOf("c")).toBe("c");
      await db.endSession("p", "compression");
      expect(await db.conversationIdOf("c")).toBe("p");
      await db.createSession("late", { source: "t", parentSessionId: "p" });
      expect(await db.conversationIdOf("late")).toBe("p");
      expect(await db.conversationIdOf("p")).toBe("p");
    });

    it("resolveTip walks compression children down to the tip and stops at other end reasons", async () => {
      const db = await store.open();
      await chain(db);
      expect(await db.resolveTip("root")).toBe("tip");
      expect(await db.resolveTip("mid")).toBe("tip");
      expect(await db.resolveTip("tip")).toBe("tip");
      expect(await db.resolveTip("unknown")).toBe("unknown");
    });

    it("picks the newest compression child when there are several", async () => {
      const clock = manualClock(1);
      const db = await store.open({ now: clock.now });
      await db.createSession("p", { source: "t" });
      await db.endSession("p", "compression");
      clock.advance(1);
      await db.createSession("c1", { source: "t", parentSessionId: "p" });
      clock.advance(1);
      await db.createSession("c2", { source: "t", parentSessionId: "p" });
      expect(await db.resolveTip("p")).toBe("c2");
    });

    it("survives a corrupt parent cycle", async () => {
      const db = await store.open();
      await db.createSession("x", { source: "t", parentSessionId: "y" });
      await db.createSession("y", { source: "t", parentSessionId: "x" });
      await db.endSession("x", "compression");
      await db.endSession("y", "compression");
      expect(["x", "y"]).toContain(await db.conversationIdOf("x"));
      expect(["x", "y"]).toContain(await db.resolveTip("x"));
    });
  });

  describe("messages", () => {
    const toolCall = (id: string) => ({ id, type: "function" as const, function: { name: "lookup", arguments: '{"q":1}' } });

    it("appends in row-id order, never by timestamp, and round-trips every column", async () => {
      const db = await store.open();
      await db.createSession("s", { source: "t" });
      const first = await db.appendMessage("s", {
        role: "user",
        content: "hi",
        api_content: "[Mon 12:00] hi",
        timestamp: 500,
        platform_message_id: "ts-1",
        display_kind: "text",
        display_metadata: { user: "U1", nested: { a: [1, 2] } },
      });
      const ids = await db.appendMessagesBatch("s", [
        { role: "assistant", content: null, tool_calls: [toolCall("c1")], timestamp: 100, finish_reason: "tool_calls" },
        { role: "tool", content: "42", tool_call_id: "c1", tool_name: "lookup", timestamp: 50 },
      ]);
      expect(ids).toEqual([first + 1, first + 2]);
      const rows = await db.getMessages("s");
      expect(rows.map((row) => row.id)).toEqual([first, ...ids]);
      expect(rows[0]).toEqual({
        id: first,
        session_id: "s",
        role: "user",
        content: "hi",
        api_content: "[Mon 12:00] hi",
        tool_calls: null,
        tool_call_id: null,
        tool_name: null,
        timestamp: 500,
        platform_message_id: "ts-1",
        display_kind: "text",
        display_metadata: { user: "U1", nested: { a: [1, 2] } },
        finish_reason: null,
      });
      expect(rows[1].tool_calls).toEqual([toolCall("c1")]);
      expect(rows[1].finish_reason).toBe("tool_calls");
      expect(rows[2]).toMatchObject({ tool_call_id: "c1", tool_name: "lookup" });
    });

    it("stamps a missing timestamp with the store clock", async () => {
      const db = await store.open({ now: () => 777 });
      await db.createSession("s", { source: "t" });
      await db.appendMessage("s", { role: "user", content: "x" });
      expect((await db.getMessages("s"))[0].timestamp).toBe(777);
    });

    it("refuses to append to a session that has no row", async () => {
      const db = await store.open();
      await expect(db.appendMessage("ghost", { role: "user", content: "x" })).rejects.toBeInstanceOf(UnknownSessionError);
    });

    it("a batch is all-or-nothing", async () => {
      const db = await store.open();
      await db.createSession("s", { source: "t" });
      const bad = { role: "narrator", content: "breaks the role check" } as unknown as ConversationMessage;
      await expect(db.appendMessagesBatch("s", [{ role: "user", content: "ok" }, bad])).rejects.toThrow(/check constraint/i);
      expect(await db.getMessages("s")).toEqual([]);
    });

    it("hasPlatformMessageId answers per session", async () => {
      const db = await store.open();
      await db.createSession("a", { source: "t" });
      await db.createSession("b", { source: "t" });
      await db.appendMessage("a", { role: "user", content: "x", platform_message_id: "m-1" });
      expect(await db.hasPlatformMessageId("a", "m-1")).toBe(true);
      expect(await db.hasPlatformMessageId("b", "m-1")).toBe(false);
      expect(await db.hasPlatformMessageId("a", "m-2")).toBe(false);
    });

    it("getMessagesAsConversation gives the model-ready transcript with message_id and, on request, _row_id", async () => {
      const db = await store.open();
      await db.createSession("s", { source: "t" });
      const [userId, assistantId] = await db.appendMessagesBatch("s", [
        { role: "user", content: "hello", api_content: "[ctx] hello", timestamp: 1, platform_message_id: "p1", display_kind: "text", display_metadata: { k: 1 } },
        { role: "assistant", content: "hi there", timestamp: 2, finish_reason: "stop" },
      ]);
      expect(await db.getMessagesAsConversation("s")).toEqual([
        { role: "user", content: "hello", api_content: "[ctx] hello", timestamp: 1, platform_message_id: "p1", message_id: "p1", display_kind: "text", display_metadata: { k: 1 } },
        { role: "assistant", content: "hi there", timestamp: 2, finish_reason: "stop" },
      ]);
      const withIds = await db.getMessagesAsConversation("s", { includeRowIds: true });
      expect(withIds.map((m) => m._row_id)).toEqual([userId, assistantId]);
    });

    it("a transcript read again hands out the frozen message objects it built for the rows it holds, a new one for each new row", async () => {
      const db = await store.open();
      await db.createSession("s", { source: "t" });
      await db.appendMessagesBatch("s", [
        { role: "user", content: "one", display_metadata: { chat: "c" } },
        { role: "assistant", content: "two" },
      ]);
      const first = await db.getMessagesAsConversation("s", { includeRowIds: true });
      await db.appendMessage("s", { role: "user", content: "three" });
      const second = await db.getMessagesAsConversation("s", { includeRowIds: true });
      expect(second.map((m) => m.content)).toEqual(["one", "two", "three"]);
      expect(second[0]).toBe(first[0]);
      expect(second[1]).toBe(first[1]);
      expect(second.every((m) => Object.isFrozen(m))).toBe(true);
      // Shared by every reader of the transcript: a change is refused, not seen by the next turn.
      expect(() => {
        (second[0] as { content: string | null }).content = "changed";
      }).toThrow(TypeError);
      expect((await db.getMessagesAsConversation("s", { includeRowIds: true }))[0].content).toBe("one");
      // Without row ids the messages are others (they lack _row_id), shared the same way.
      const plain = await db.getMessagesAsConversation("s");
      expect(plain[0]).not.toBe(second[0]);
      expect(plain[0]._row_id).toBeUndefined();
      expect((await db.getMessagesAsConversation("s"))[0]).toBe(plain[0]);
    });

    describe("repairAlternation", () => {
      async function transcript(messages: ConversationMessage[]): Promise<ConversationMessage[]> {
        const db = await store.open();
        await db.createSession("r", { source: "t" });
        await db.appendMessagesBatch("r", messages.map((m, i) => ({ timestamp: i, ...m })));
        const repaired = await db.getMessagesAsConversation("r", { repairAlternation: true });
        return repaired.map(({ role, content, tool_calls, tool_call_id }) => ({
          role,
          content,
          ...(tool_calls ? { tool_calls } : {}),
          ...(tool_call_id ? { tool_call_id } : {}),
        }));
      }

      it("drops tool results whose call is missing", async () => {
        expect(
          await transcript([
            { role: "user", content: "q" },
            { role: "tool", content: "orphan", tool_call_id: "nope" },
            { role: "assistant", content: null, tool_calls: [toolCall("c1")] },
            { role: "tool", content: "r1", tool_call_id: "c1" },
            { role: "tool", content: "stray", tool_call_id: "c9" },
            { role: "tool", content: "dup", tool_call_id: "c1" },
            { role: "assistant", content: "done" },
          ]),
        ).toEqual([
          { role: "user", content: "q" },
          { role: "assistant", content: null, tool_calls: [toolCall("c1")] },
          { role: "tool", content: "r1", tool_call_id: "c1" },
          { role: "assistant", content: "done" },
        ]);
      });

      it("drops assistant tool calls left without results at the end (a crash mid-tool)", async () => {
        expect(
          await transcript([
            { role: "user", content: "q" },
            { role: "assistant", content: null, tool_calls: [toolCall("c1"), toolCall("c2")] },
            { role: "tool", content: "r1", tool_call_id: "c1" },
            { role: "user", content: "again" },
            { role: "assistant", content: "let me look", tool_calls: [toolCall("c3")] },
            { role: "assistant", content: null, tool_calls: [toolCall("c4")] },
          ]),
        ).toEqual([
          { role: "user", content: "q" },
          { role: "assistant", content: null, tool_calls: [toolCall("c1")] },
          { role: "tool", content: "r1", tool_call_id: "c1" },
          { role: "user", content: "again" },
          { role: "assistant", content: "let me look" },
        ]);
      });

      it("merges nothing else: consecutive user messages stay as they are", async () => {
        const messages: ConversationMessage[] = [
          { role: "system", content: "sys" },
          { role: "user", content: "one" },
          { role: "user", content: "two" },
          { role: "assistant", content: "a" },
          { role: "assistant", content: "b" },
        ];
        expect(await transcript(messages)).toEqual(messages);
      });

      it("repairs a held transcript whose first tool call came after it was last read", async () => {
        const db = await store.open();
        await db.createSession("h", { source: "t" });
        await db.appendMessagesBatch("h", [{ role: "user", content: "q", timestamp: 1 }]);
        const read = async (): Promise<Array<Pick<ConversationMessage, "role" | "content" | "tool_calls">>> =>
          (await db.getMessagesAsConversation("h", { repairAlternation: true })).map(({ role, content, tool_calls }) => ({ role, content, ...(tool_calls ? { tool_calls } : {}) }));
        expect(await read()).toEqual([{ role: "user", content: "q" }]);
        // Only the rows added since are read now; the call among them has no result.
        await db.appendMessagesBatch("h", [{ role: "assistant", content: "let me look", tool_calls: [toolCall("c1")], timestamp: 2 }]);
        expect(await read()).toEqual([
          { role: "user", content: "q" },
          { role: "assistant", content: "let me look" },
        ]);
      });
    });
  });

  describe("session keys by prefix", () => {
    it("lists each routing key with the prefix once, and no other", async () => {
      const db = await store.open();
      await db.createSession("a", { source: "slack", sessionKey: "slack:T:C:1.1" });
      await db.createSession("b", { source: "slack", sessionKey: "slack:T:C:1.1" });
      await db.createSession("c", { source: "slack", sessionKey: "slack:T:C:2.2" });
      await db.createSession("d", { source: "discord", sessionKey: "discord:G:C:TH" });
      await db.createSession("e", { source: "api", sessionKey: "slackish" });
      // Punctuation and case count byte by byte (a linguistic collation would sort "slackish" among "slack:…").
      await db.createSession("f", { source: "api", sessionKey: "Slack:upper" });
      await db.createSession("g", { source: "slack", sessionKey: "slack:é:ünïcode" });
      expect(await db.sessionKeysWithPrefix("slack:")).toEqual(["slack:T:C:1.1", "slack:T:C:2.2", "slack:é:ünïcode"]);
      expect(await db.sessionKeysWithPrefix("discord:")).toEqual(["discord:G:C:TH"]);
      expect(await db.sessionKeysWithPrefix("slack:", 1)).toHaveLength(1);
    });
  });
});
