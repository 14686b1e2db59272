// Compaction: older messages become a summary at the start of a child session; the parent ends
// with 'compression', the chain resolves to the child, and the lease key stays the root.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Agent } from "../../src/agent/agent.js";
import { COMPACTION_SUMMARY_KIND } from "../../src/agent/compaction.js";
import type { SessionStore } from "../../src/state/index.js";
import type { CompletionRequest } from "../../src/agent/types.js";
import { storeBackends, type StoreBackend } from "../support/store-backends.js";
import { liveStore, type LiveStore } from "./support/live-store.js";
import { ScriptedProvider, reply } from "./support/scripted-provider.js";

let live: LiveStore | null = null;
afterEach(async () => {
  await live?.cleanup();
  live = null;
});

let backend: StoreBackend;

async function longSession(): Promise<SessionStore> {
  live = liveStore(backend, "compaction");
  const db = await live.open();
  await db.createSession("root", { source: "slack", sessionKey: "slack:T1:C1", chatId: "C1" });
  for (let index = 0; index < 6; index++) {
    await db.appendMessage("root", {
      role: index % 2 === 0 ? "user" : "assistant",
      content: `message ${index} ${"x".repeat(150)}`,
      platform_message_id: index % 2 === 0 ? `p-${index}` : null,
    });
  }
  return db;
}

describe.each(storeBackends)("on $name", (each) => {
  beforeEach(() => {
    backend = each;
  });

  describe("compaction", () => {
    it("summarises older messages into a child session and moves the agent there", async () => {
      const db = await longSession();
      const during: { tipLease?: string | null; rootLease?: string | null; holder?: string | null } = {};
      let agent: Agent | null = null;
      const provider = new ScriptedProvider([
        reply("SUMMARY: six messages about x"),
        async (_request: CompletionRequest) => {
          during.tipLease = (await db.getSessionTurnLease(agent?.lastTurn?.sessionId ?? ""))?.holder ?? null;
          during.rootLease = (await db.getSessionTurnLease("root"))?.holder ?? null;
          during.holder = agent?.lastTurn?.holder ?? null;
          return reply("final answer");
        },
      ]);
      const statuses: string[] = [];
      agent = new Agent({
        store: db,
        provider,
        sessionId: "root",
        platform: "slack",
        compaction: { maxChars: 500, keepRecent: 2 },
        statusCallback: (_kind, text) => statuses.push(text),
      });

      // No caller history: the transcript is read under the lease.
      const result = await agent.runConversation("new question");

      expect(result.completed).toBe(true);
      expect(result.finalResponse).toBe("final answer");
      const child = result.sessionId;
      expect(child).not.toBe("root");
      expect(agent.sessionId).toBe(child);
      if (!child) throw new Error("no child session");

      // The chain.
      expect(await db.getSession("root")).toMatchObject({ end_reason: "compression" });
      expect(await db.getSession(child)).toMatchObject({ parent_session_id: "root", source: "slack", session_key: "slack:T1:C1", chat_id: "C1" });
      expect(await db.resolveTip("root")).toBe(child);
      expect(await db.conversationIdOf(child)).toBe("root");

      // The summary request, then the model sees summary + recent + new input.
      expect(provider.requests[0].tools).toBeUndefined();
      expect(provider.requests[0].messages[0].content).toMatch(/Summarise/);
      expect(provider.requests[0].messages[1].content).toContain("message 0");
      expect(provider.requests[0].messages[1].content).not.toContain("message 4");
      const seen = provider.requests[1].messages.map((m) => m.content ?? "");
      expect(seen[0]).toContain("SUMMARY: six messages about x");
      expect(seen.slice(1).map((text) => text.slice(0, 9))).toEqual(["message 4", "message 5", "new quest", ]);

      // Stored: the parent untouched, the child holds summary, recent copies and this turn.
      expect(await db.getMessages("root")).toHaveLength(6);
      const rows = await db.getMessages(child);
      expect(rows[0]).toMatchObject({ role: "user", display_kind: COMPACTION_SUMMARY_KIND });
      expect(rows.map((row) => (row.content ?? "").slice(0, 9))).toEqual(["[Summary ", "message 4", "message 5", "new quest", "final ans"]);
      expect(rows[1].platform_message_id).toBe("p-4");

      // One lease key for the whole chain, held by this turn, released after.
      expect(during.holder).toMatch(/^pid=/);
      expect(during.tipLease).toBe(during.holder);
      expect(during.rootLease).toBe(during.holder);
      expect(await db.getSessionTurnLease("root")).toBeNull();
      expect(statuses.some((text) => /Summarised/.test(text))).toBe(true);

      // A later turn addressed to the old id resolves to the child and sees the summary.
      const next = new Agent({ store: db, provider: new ScriptedProvider([reply("again")]), sessionId: "root", platform: "slack" });
      const nextResult = await next.runConversation("and now?");
      expect(nextResult.sessionId).toBe(child);
      expect((await db.getMessages(child)).map((row) => row.content).slice(-2)).toEqual(["and now?", "again"]);
    });

    it("an input stored at admission in the parent is stored again in the child, after the recent copies", async () => {
      const db = await longSession();
      const row = (await db.recordInbound({ platform: "slack", platformMessageId: "p-new", sessionId: "root", payload: { text: "new question" } })).row;
      const provider = new ScriptedProvider([reply("SUMMARY"), reply("final answer")]);
      const agent = new Agent({ store: db, provider, sessionId: "root", platform: "slack", compaction: { maxChars: 500, keepRecent: 2 } });
      const input = { text: "new question", platformMessageId: "p-new", timestamp: 100 };
      const result = await agent.runConversation(null, {
        pendingInboxLimit: 1,
        expectedInput: { inboxId: row.id, input, session: { source: "slack" } },
        admittedInput: async ({ pendingInbox }) => (pendingInbox?.[0]?.id === row.id ? { messages: [input] } : null),
      });
      expect(result.completed).toBe(true);
      const child = result.sessionId ?? "";
      expect(child).not.toBe("root");
      // Stored at admission in the parent (then the tip), and in the child once the turn moved there.
      const parentRows = await db.getMessages("root");
      expect(parentRows).toHaveLength(7);
      expect(parentRows.at(-1)?.platform_message_id).toBe("p-new");
      const rows = await db.getMessages(child);
      expect(rows.map((m) => (m.content ?? "").slice(0, 9))).toEqual(["[Summary ", "message 4", "message 5", "new quest", "final ans"]);
      expect(provider.requests[1].messages.map((m) => (m.content ?? "").slice(0, 9)).slice(-1)).toEqual(["new quest"]);
    });

    it("leaves a short transcript alone", async () => {
      const db = await longSession();
      const provider = new ScriptedProvider([reply("answer")]);
      const agent = new Agent({
        store: db,
        provider,
        sessionId: "root",
        platform: "slack",
        compaction: { maxChars: 100_000, keepRecent: 2 },
      });
      const result = await agent.runConversation("q");
      expect(result.sessionId).toBe("root");
      expect(provider.requests).toHaveLength(1);
      expect((await db.getSession("root"))?.end_reason).toBeNull();
    });

    it("keeps going uncompacted when the summary call fails", async () => {
      const db = await longSession();
      const provider = new ScriptedProvider([new Error("summary failed"), reply("answer")]);
      const agent = new Agent({
        store: db,
        provider,
        sessionId: "root",
        platform: "slack",
        compaction: { maxChars: 500, keepRecent: 2 },
      });
      const result = await agent.runConversation("q");
      expect(result.completed).toBe(true);
      expect(result.sessionId).toBe("root");
      expect((await db.getMessages("root")).map((row) => row.content).slice(-2)).toEqual(["q", "answer"]);
    });
  });
});
