// The seed's turn admission scenarios that need a live store (two instances on one database),
// on SQLite and on PostgreSQL.
import { afterEach, describe, expect, it } from "vitest";
import { Agent } from "../../src/agent/agent.js";
import { Turn } from "../../src/agent/turn.js";
import type { LoopResult, RunLoop } from "../../src/agent/turn-types.js";
import type { ConversationMessage, LeaseAcquireOptions } from "../../src/state/types.js";
import { latch, within } from "./support/async.js";
import { storeBackends } from "../support/store-backends.js";
import { liveStore, type LiveStore } from "./support/live-store.js";
import { ScriptedProvider } from "./support/scripted-provider.js";

let live: LiveStore | null = null;
afterEach(async () => {
  await live?.cleanup();
  live = null;
});

function okLoop(history: ConversationMessage[]): LoopResult {
  return { finalResponse: "ok", messages: history, failed: false };
}

describe.each(storeBackends)("turn admission on a live store ($name)", (backend) => {
  it("firstTurnOnFreshSessionSerializesASecondWriter", async () => {
    // A client-addressed session id has no row until its first turn writes one; a second turn
    // arriving meanwhile must wait for that turn and see its rows, not interleave.
    live = liveStore(backend, "admission");
    const dbA = await live.open();
    const dbB = await live.open();
    const aInTurn = latch();
    const aMayFinish = latch();
    let aFinished = false;
    const observed: { aFinished?: boolean; history?: Array<string | null> } = {};

    const fakeRun =
      (agent: Agent): RunLoop =>
      async (message, _system, history) => {
        const store = agent.store;
        if (!store) throw new Error("no store");
        if (message === "first") {
          await store.createSession("client-id", { source: "api_server" });
          await store.appendMessage("client-id", { role: "user", content: "first" });
          aInTurn.resolve();
          await within(aMayFinish.promise, 10_000);
          await store.appendMessage("client-id", { role: "assistant", content: "first answer" });
          aFinished = true; // still inside the turn, so strictly before the lease is released
        } else {
          observed.aFinished = aFinished;
          observed.history = history.map((m) => m.content);
        }
        return okLoop(history);
      };

    const provider = new ScriptedProvider();
    const agentA = new Agent({ store: dbA, provider, sessionId: "client-id", platform: "api_server" });
    agentA.runLoop = fakeRun(agentA);
    const agentB = new Agent({ store: dbB, provider, sessionId: "client-id", platform: "api_server", sessionRowKnown: true });
    agentB.runLoop = fakeRun(agentB);

    // B either starts waiting on the lease or, unserialized, runs to the end.
    const bWaitingOrDone = latch();
    const realAcquire = dbB.acquireSessionTurnLease.bind(dbB);
    dbB.acquireSessionTurnLease = (sessionId: string, holder: string, options?: LeaseAcquireOptions) =>
      realAcquire(sessionId, holder, {
        ...options,
        onWait: (elapsed) => {
          bWaitingOrDone.resolve();
          options?.onWait?.(elapsed);
        },
      });
    const runB = async (): Promise<void> => {
      try {
        await agentB.runConversation("second", {
          conversationHistory: await dbB.getMessagesAsConversation("client-id"),
        });
      } finally {
        bWaitingOrDone.resolve();
      }
    };

    try {
      const turnA = agentA.runConversation("first", { conversationHistory: [] });
      expect(await within(aInTurn.promise, 10_000)).toBe(true);
      const turnB = runB();
      expect(await within(bWaitingOrDone.promise, 10_000)).toBe(true);
      aMayFinish.resolve();
      expect(await within(Promise.all([turnA, turnB]), 10_000)).toBe(true);
    } finally {
      aMayFinish.resolve();
    }

    expect(observed.aFinished).toBe(true);
    expect(observed.history).toEqual(["first", "first answer"]);
  });

  it("flushMessagesToSessionDbFencesStaleHolderOnLiveDb", async () => {
    // A-loses / B-acquires / A-late-flush, through the real persist path.
    live = liveStore(backend, "admission");
    const first = await live.open();
    const second = await live.open();
    await first.createSession("shared", { source: "test" });
    const staleHolder = "pid=1:turn=stale";
    const nextHolder = "pid=2:turn=next";
    expect(await first.tryAcquireSessionTurnLease("shared", staleHolder, { ttlSeconds: 5 })).toBe(true);

    const agent = new Agent({ store: first, provider: new ScriptedProvider(), sessionId: "shared", platform: "test" });
    // The stale turn, outside runConversation: its flush is fenced by the holder it was admitted with.
    const turn = new Turn(agent, { sessionId: "shared", sessionRowKnown: true });
    turn.holdLease("shared", staleHolder);
    const owned: ConversationMessage[] = [{ role: "user", content: "stale-owned" }];
    expect((await turn.flush(owned, [])).kind).toBe("ok");
    expect((await first.getMessages("shared")).map((m) => m.content)).toEqual(["stale-owned"]);

    await first.releaseSessionTurnLease("shared", staleHolder);
    expect(await second.tryAcquireSessionTurnLease("shared", nextHolder, { ttlSeconds: 5 })).toBe(true);

    const late: ConversationMessage[] = [{ role: "assistant", content: "late stale reply" }];
    expect((await turn.flush(late, [])).kind).toBe("leaseLost");
    expect(turn.leaseLost).toBe(true);
    expect((await second.getMessages("shared")).map((m) => m.content)).toEqual(["stale-owned"]);

    turn.holdLease("shared", nextHolder);
    expect((await turn.flush(late, [])).kind).toBe("ok");
    expect((await second.getMessages("shared")).map((m) => m.content)).toEqual(["stale-owned", "late stale reply"]);
    await second.releaseSessionTurnLease("shared", nextHolder);
  });
});
