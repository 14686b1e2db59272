// Waiting behind another worker's turn on a real store (SQLite and PostgreSQL): notices,
// interrupts while waiting, carried input stored exactly once, and the timeout.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Agent } from "../../src/agent/agent.js";
import { PERSIST_AFTER_ADMISSION_INTERRUPT } from "../../src/agent/messages.js";
import type { AgentEvent, StatusKind } from "../../src/agent/types.js";
import type { SessionStore } from "../../src/state/index.js";
import { latch, within } from "./support/async.js";
import { storeBackends, type StoreBackend } from "../support/store-backends.js";
import { liveStore, type LiveStore } from "./support/live-store.js";
import { ScriptedProvider, reply } from "./support/scripted-provider.js";

let live: LiveStore | null = null;
afterEach(async () => {
  await live?.cleanup();
  live = null;
});

const OTHER = "pid=999999:host=another-host:turn=s1:abcd1234:platform=test";
/** The turns' lease wait, and the fallback poll: both far past the guard (within) on each wait below. */
const WAIT_SECONDS = 3_600;
const GUARD_MS = 15_000;

let backend: StoreBackend;

async function sessionHeldByAnotherWorker(): Promise<SessionStore> {
  live = liveStore(backend, "lease_wait");
  // The fallback poll, the holder's expiry (60 s) and the wait's deadline lie past the guards
  // below: only the interrupt (or a release) ends a wait before them.
  const db = await live.open({ pollIntervalMs: WAIT_SECONDS * 1000 });
  await db.createSession("s1", { source: "test" });
  await db.appendMessage("s1", { role: "user", content: "earlier" });
  expect(await db.tryAcquireSessionTurnLease("s1", OTHER, { ttlSeconds: 60 })).toBe(true);
  return db;
}

describe.each(storeBackends)("on $name", (each) => {
  beforeEach(() => {
    backend = each;
  });

  describe("waiting for the lease", () => {
    it("an interrupt ends the wait and carries the input, which the next turn stores once", async () => {
      const db = await sessionHeldByAnotherWorker();
      const provider = new ScriptedProvider([reply("first answer"), reply("second answer")]);
      const waiting = latch();
      const events: AgentEvent[] = [];
      const statuses: Array<[StatusKind, string]> = [];
      const agent = new Agent({
        store: db,
        provider,
        sessionId: "s1",
        platform: "test",
        leaseWaitSeconds: WAIT_SECONDS,
        onEvent: (event) => {
          events.push(event);
          if (event.kind === "turn.waiting") waiting.resolve();
        },
        statusCallback: (kind, text) => statuses.push([kind, text]),
      });

      const turn = agent.runConversation("original", { conversationHistory: [] });
      expect(await within(waiting.promise, 5_000)).toBe(true);
      expect(statuses).toEqual([["lifecycle", "Another worker is running a turn on this session; waiting…"]]);
      agent.interrupt("follow-up while waiting");
      expect(await within(turn, GUARD_MS)).toBe(true);
      const first = await turn;
      expect(first.interrupted).toBe(true);
      expect(first.failed).toBe(false);
      expect(first.interruptMessage).toBe("follow-up while waiting");
      expect(first.messages.at(-1)).toMatchObject({ role: "user", content: "original", [PERSIST_AFTER_ADMISSION_INTERRUPT]: true });
      expect(provider.requests).toHaveLength(0);
      expect(agent.lastTurn?.interruptRequested).toBe(false);
      expect((await db.getSessionTurnLease("s1"))?.holder).toBe(OTHER);

      // The other worker finishes; the follow-up turn stores the carried input and its own, once.
      await db.releaseSessionTurnLease("s1", OTHER);
      const second = await agent.runConversation("follow-up", { conversationHistory: first.messages });
      expect(second.completed).toBe(true);
      expect(provider.requests[0].messages.filter((m) => m.role === "user").map((m) => m.content)).toEqual([
        "original",
        "follow-up",
      ]);
      // A third turn handed the same objects again writes nothing twice.
      await agent.runConversation("third", { conversationHistory: second.messages });
      expect((await db.getMessages("s1")).map((m) => m.content)).toEqual([
        "earlier",
        "original",
        "follow-up",
        "first answer",
        "third",
        "second answer",
      ]);
    });

    it("a hard cancel while waiting drops the unadmitted input", async () => {
      const db = await sessionHeldByAnotherWorker();
      const waiting = latch();
      const agent = new Agent({
        store: db,
        provider: new ScriptedProvider(),
        sessionId: "s1",
        platform: "test",
        leaseWaitSeconds: WAIT_SECONDS,
        onEvent: (event) => {
          if (event.kind === "turn.waiting") waiting.resolve();
        },
      });
      const history = [{ role: "user" as const, content: "earlier" }];
      const turn = agent.runConversation("never admitted", { conversationHistory: history });
      expect(await within(waiting.promise, 5_000)).toBe(true);
      agent.interrupt(null, { hardCancel: true });
      const result = await turn;
      expect(result.interrupted).toBe(true);
      expect(result.messages).toEqual(history);
    });

    it("admits the waiter once the holder releases, announcing the wait and reloading what it wrote", async () => {
      const db = await sessionHeldByAnotherWorker();
      const provider = new ScriptedProvider([reply("after the wait")]);
      const waiting = latch();
      const statuses: string[] = [];
      const agent = new Agent({
        store: db,
        provider,
        sessionId: "s1",
        platform: "test",
        leaseWaitSeconds: WAIT_SECONDS,
        onEvent: (event) => {
          if (event.kind === "turn.waiting") waiting.resolve();
        },
        statusCallback: (_kind, text) => statuses.push(text),
      });

      const turn = agent.runConversation("next", { conversationHistory: [{ role: "user", content: "stale view" }] });
      expect(await within(waiting.promise, 5_000)).toBe(true);
      await db.appendMessage("s1", { role: "assistant", content: "the other worker's reply" });
      await db.releaseSessionTurnLease("s1", OTHER);
      // Woken by the release: nothing else ends the wait before the guard.
      expect(await within(turn, GUARD_MS)).toBe(true);
      const result = await turn;
      expect(result.completed).toBe(true);
      expect(statuses).toEqual([
        "Another worker is running a turn on this session; waiting…",
        "Session is free; loading the latest transcript…",
      ]);
      expect(provider.requests[0].messages.map((m) => m.content)).toEqual(["earlier", "the other worker's reply", "next"]);
    });

    it("times out without running or releasing anything", async () => {
      const db = await sessionHeldByAnotherWorker();
      const provider = new ScriptedProvider([reply("never")]);
      const statuses: Array<[StatusKind, string]> = [];
      const agent = new Agent({
        store: db,
        provider,
        sessionId: "s1",
        platform: "test",
        leaseWaitSeconds: 0.3,
        statusCallback: (kind, text) => statuses.push([kind, text]),
      });
      const result = await agent.runConversation("hello", { conversationHistory: [] });
      expect(result).toMatchObject({ failed: true, completed: false, error: "session_turn_lease_timeout:s1", failureReason: "lease_timeout" });
      expect(result.finalResponse).toMatch(/send it again/);
      expect(statuses.map(([kind]) => kind)).toEqual(expect.arrayContaining(["lifecycle", "warn"]));
      expect(provider.requests).toHaveLength(0);
      expect((await db.getSessionTurnLease("s1"))?.holder).toBe(OTHER);
      expect((await db.getMessages("s1")).map((m) => m.content)).toEqual(["earlier"]);
    });
  });
});
