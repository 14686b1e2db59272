// The seed's turn admission scenarios (every one), against a recording stand-in store.
// The live-database scenarios are in turn-admission-live.test.ts.
import { describe, expect, it } from "vitest";
import { Agent } from "../../src/agent/agent.js";
import { PERSIST_AFTER_ADMISSION_INTERRUPT } from "../../src/agent/messages.js";
import { Turn } from "../../src/agent/turn.js";
import type { InterruptOptions, LoopResult } from "../../src/agent/turn-types.js";
import type { StatusKind } from "../../src/agent/types.js";
import type { AppendBatchOptions, ConversationMessage, LeaseAcquireOptions } from "../../src/state/types.js";
import { latch, sleep, within } from "./support/async.js";
import { ScriptedProvider } from "./support/scripted-provider.js";
import { StubStore } from "./support/stub-store.js";

function agentWithDb(db: StubStore, { sessionId = "stale-parent", platform = "desktop", sessionRowKnown = true } = {}): Agent {
  return new Agent({ store: db, provider: new ScriptedProvider(), sessionId, platform, sessionRowKnown });
}

function okLoop(history: ConversationMessage[], finalResponse = "ok"): LoopResult {
  return { finalResponse, messages: history, failed: false };
}

function databaseLocked(): Error {
  return Object.assign(new Error("database is locked"), { code: "SQLITE_BUSY" });
}

/** Records interrupt calls the way the seed's track_interrupt does (and interrupts, softly). */
function trackInterrupts(agent: Agent): Array<[string | null | undefined, boolean | undefined]> {
  const calls: Array<[string | null | undefined, boolean | undefined]> = [];
  const interrupt = agent.interrupt;
  agent.interrupt = (message?: string | null, options?: InterruptOptions) => {
    calls.push([message, options?.hardCancel]);
    void interrupt(message);
  };
  return calls;
}

/** The seed's fake loop that waits (bounded) for the turn to be interrupted. */
async function loopUntilInterrupted(agent: Agent, history: ConversationMessage[], what: string): Promise<LoopResult> {
  const deadline = Date.now() + 2_000;
  while (Date.now() < deadline) {
    if (agent.lastTurn?.interruptRequested) {
      return { finalResponse: "", messages: history, apiCalls: 0, completed: false, interrupted: true };
    }
    await sleep(10);
  }
  throw new Error(`${what} did not interrupt the turn`);
}

describe("turn admission", () => {
  it.each(["onWait", "onContended"] as const)(
    "runConversationAcquiresThenReloadsLatestTip (%s)",
    async (signal) => {
      // A lease wait and a busy-database retry both reload after admission (the busy writer may be
      // the previous holder's final flush); only a real holder is announced to the user.
      const db = new StubStore();
      const agent = agentWithDb(db);
      const statusEvents: Array<[StatusKind, string]> = [];
      agent.statusCallback = (kind, text) => statusEvents.push([kind, text]);
      const observed: Record<string, unknown> = {};
      agent.runLoop = async (_message, _system, history, { turn }) => {
        observed.history = history;
        observed.sessionId = turn.sessionId;
        return okLoop(history);
      };
      db.acquireSessionTurnLease = async (sessionId: string, holder: string, options?: LeaseAcquireOptions) => {
        db.events.push(["acquire", sessionId, holder]);
        if (signal === "onWait") options?.onWait?.(0);
        else options?.onContended?.();
        return true;
      };

      const result = await agent.runConversation("new message", {
        conversationHistory: [{ role: "user", content: "stale" }],
      });

      expect(result.finalResponse).toBe("ok");
      expect(observed).toEqual({
        history: [{ role: "user", content: "durable latest" }],
        sessionId: "compressed-tip",
      });
      expect(db.eventNames()).toEqual(["acquire", "resolve", "reload", "release"]);
      expect(db.events[2][2]).toEqual({ repairAlternation: true, includeRowIds: true });
      const texts = statusEvents.map(([, text]) => text ?? "");
      for (const notice of ["Another worker", "Session is free"]) {
        expect(texts.some((text) => text.includes(notice)), notice).toBe(signal === "onWait");
      }
    },
  );

  it("runConversationAcquiresLeaseWhenSessionProbeRaises", async () => {
    // A locked get_session must not skip the durable lease.
    const db = new StubStore();
    db.getSession = async () => {
      throw databaseLocked();
    };
    const agent = agentWithDb(db);
    db.acquireSessionTurnLease = async (sessionId: string, holder: string, options?: LeaseAcquireOptions) => {
      db.events.push(["acquire", sessionId, holder]);
      options?.onWait?.(0);
      return true;
    };
    const observed: Record<string, unknown> = {};
    agent.runLoop = async (_message, _system, history, { turn }) => {
      observed.history = history;
      observed.sessionId = turn.sessionId;
      return okLoop(history);
    };

    const result = await agent.runConversation("new message", {
      conversationHistory: [{ role: "user", content: "stale" }],
    });

    expect(result.finalResponse).toBe("ok");
    expect(observed).toEqual({
      history: [{ role: "user", content: "durable latest" }],
      sessionId: "compressed-tip",
    });
    expect(db.eventNames()).toEqual(["acquire", "resolve", "reload", "release"]);
  });

  const LATEST: ConversationMessage[] = [{ role: "user", content: "durable latest" }];
  it.each([
    // No row after the wait: keep the caller's seed, even if a reload would return rows.
    { id: "absent-after-wait", rowAfter: false as const, reloadRows: LATEST, expectReload: false },
    // The holder created the row meanwhile: reload it, and skip the redundant create.
    { id: "created-during-wait", rowAfter: true as const, reloadRows: LATEST, expectReload: true },
    // A proven row wins even when its transcript is empty.
    { id: "created-empty-during-wait", rowAfter: true as const, reloadRows: [], expectReload: true },
    // An unreadable row that reloads nothing keeps the caller's history, carried input included.
    { id: "unreadable-empty", rowAfter: "raises" as const, reloadRows: [], expectReload: false },
  ])("waitedAdmissionUsesTheRowReadAfterTheLease ($id)", async ({ rowAfter, reloadRows, expectReload }) => {
    // After a contended wait, the row state read under the lease decides reload and row flag.
    const db = new StubStore();
    db.acquireSessionTurnLease = async (sessionId: string, holder: string, options?: LeaseAcquireOptions) => {
      db.events.push(["acquire", sessionId, holder]);
      options?.onWait?.(0);
      if (rowAfter === "raises") {
        db.getSession = async () => {
          throw databaseLocked();
        };
      } else {
        db.sessionExists = rowAfter;
      }
      return true;
    };
    db.getMessagesAsConversation = async () => reloadRows.map((message) => ({ ...message }));
    const agent = agentWithDb(db, { sessionId: "client-id", platform: "api_server", sessionRowKnown: false });
    const observed: { history?: ConversationMessage[]; rowKnown?: boolean } = {};
    agent.runLoop = async (_message, _system, history, { turn }) => {
      observed.history = history;
      observed.rowKnown = turn.sessionRowKnown;
      return okLoop(history);
    };
    const carried: ConversationMessage = { role: "user", content: "carried", [PERSIST_AFTER_ADMISSION_INTERRUPT]: true };
    const seed: ConversationMessage[] = [{ role: "user", content: "caller history" }, carried];

    await agent.runConversation("work", { conversationHistory: seed });

    if (expectReload) {
      expect(observed.history).toEqual([...reloadRows, carried]);
    } else {
      expect(observed.history).toBe(seed);
    }
    expect(observed.rowKnown).toBe(rowAfter === true);
  });

  it("runConversationLeaseTimeoutReturnsResendNotice", async () => {
    const db = new StubStore({ acquireResult: false });
    const agent = agentWithDb(db);
    const statusEvents: Array<[StatusKind, string]> = [];
    agent.statusCallback = (kind, text) => statusEvents.push([kind, text]);
    agent.runLoop = async () => {
      throw new Error("turn must not start without a lease");
    };

    const result = await agent.runConversation("new message", {
      conversationHistory: [{ role: "user", content: "stale" }],
    });

    expect(result.failed).toBe(true);
    expect(result.completed).toBe(false);
    expect(result.error).toContain("session_turn_lease_timeout:");
    expect(result.finalResponse).toBeTruthy();
    expect(db.eventNames()).toEqual(["acquire"]);
    expect(statusEvents.some(([kind, text]) => kind === "lifecycle" && text)).toBe(true);
    expect(statusEvents.some(([kind, text]) => kind === "warn" && text)).toBe(true);
  });

  it("runConversationLeaseWaitHonorsInterrupt", async () => {
    const db = new StubStore();
    const agent = agentWithDb(db);
    db.acquireSessionTurnLease = async (sessionId: string, holder: string, options?: LeaseAcquireOptions) => {
      db.events.push(["acquire", sessionId, holder]);
      const shouldAbort = options?.shouldAbort;
      expect(typeof shouldAbort).toBe("function");
      agent.interrupt("follow-up while waiting");
      expect(shouldAbort?.()).toBe(true);
      return false;
    };
    agent.runLoop = async () => {
      throw new Error("turn must not start when lease wait is aborted");
    };

    const result = await agent.runConversation(
      {
        text: "new message",
        apiText: "[Monday 12:00] new message",
        timestamp: 123.0,
        displayKind: "internal_notification",
        displayMetadata: { kind: "test" },
        platformMessageId: "platform-1",
      },
      { conversationHistory: [{ role: "user", content: "stale" }] },
    );

    expect(result.interrupted).toBe(true);
    expect(result.failed).not.toBe(true);
    expect(result.finalResponse).toBeTruthy();
    expect(result.interruptMessage).toBe("follow-up while waiting");
    expect(result.messages.at(-1)).toStrictEqual({
      role: "user",
      content: "new message",
      api_content: "[Monday 12:00] new message",
      timestamp: 123.0,
      display_kind: "internal_notification",
      display_metadata: { kind: "test" },
      platform_message_id: "platform-1",
      _persist_after_admission_interrupt: true,
    });
    expect(String(result.error ?? "")).not.toContain("session_turn_lease_timeout");
    expect(db.eventNames()).toEqual(["acquire"]);
    expect(agent.lastTurn?.interruptRequested).toBe(false);
    expect(agent.lastTurn?.interruptMessage).toBeNull();
  });

  it("preAdmissionUserRowInHistoryIsFlushedOnce", async () => {
    const db = new StubStore();
    const agent = agentWithDb(db, { sessionId: "session" });
    const persisted: ConversationMessage = { role: "assistant", content: "old reply" };
    const interrupted: ConversationMessage = {
      role: "user",
      content: "original",
      [PERSIST_AFTER_ADMISSION_INTERRUPT]: true,
    };
    const current: ConversationMessage = { role: "user", content: "follow-up" };
    const history = [persisted, interrupted];
    const messages = [...history, current];

    const turn = new Turn(agent, { sessionId: agent.sessionId, sessionRowKnown: agent.sessionRowKnown });
    expect((await turn.flush(messages, history)).kind).toBe("ok");
    expect((await turn.flush(messages, history)).kind).toBe("ok");

    const appends = db.events.filter((event) => event[0] === "append");
    expect(appends).toHaveLength(1);
    const rows = appends[0][2] as ConversationMessage[];
    expect(rows.map((row) => [row.role, row.content])).toEqual([
      ["user", "original"],
      ["user", "follow-up"],
    ]);
  });

  it("runConversationSecondTurnAfterLeaseWaitAbort", async () => {
    const db = new StubStore();
    const agent = agentWithDb(db);
    let turn = 0;
    db.acquireSessionTurnLease = async (sessionId: string, holder: string, options?: LeaseAcquireOptions) => {
      db.events.push(["acquire", sessionId, holder]);
      if (turn === 0) {
        agent.interrupt("follow-up while waiting");
        expect(options?.shouldAbort?.()).toBe(true);
        return false;
      }
      expect(options?.shouldAbort?.()).toBe(false);
      return true;
    };
    agent.runLoop = async (_message, _system, history) => okLoop(history);

    const first = await agent.runConversation("new message", {
      conversationHistory: [{ role: "user", content: "stale" }],
    });
    expect(first.interrupted).toBe(true);
    turn = 1;
    const second = await agent.runConversation("follow-up", {
      conversationHistory: [{ role: "user", content: "stale" }],
    });
    expect(second.finalResponse).toBe("ok");
    expect(agent.lastTurn?.interruptRequested).toBe(false);
  });

  it("carriedInputSurvivesWaitedReloadOnFollowUpTurn", async () => {
    const db = new StubStore();
    const agent = agentWithDb(db);
    let turn = 0;
    db.acquireSessionTurnLease = async (sessionId: string, holder: string, options?: LeaseAcquireOptions) => {
      db.events.push(["acquire", sessionId, holder]);
      if (turn === 0) {
        agent.interrupt("follow-up while waiting");
        return false;
      }
      options?.onWait?.(0); // the follow-up also has to wait before admission
      return true;
    };
    const observed: { history?: ConversationMessage[] } = {};
    agent.runLoop = async (_message, _system, history) => {
      observed.history = history;
      return okLoop(history);
    };

    const first = await agent.runConversation("original", {
      conversationHistory: [{ role: "user", content: "stale" }],
    });
    expect(first.interrupted).toBe(true);
    const carried = first.messages.at(-1);
    expect(carried?.[PERSIST_AFTER_ADMISSION_INTERRUPT]).toBe(true);
    turn = 1;
    await agent.runConversation("follow-up", { conversationHistory: first.messages });

    expect(observed.history).toEqual([{ role: "user", content: "durable latest" }, carried]);
  });

  it("runConversationInterruptsWhenLeaseRefreshLost", async () => {
    const db = new StubStore();
    const agent = agentWithDb(db);
    agent.leaseRefreshIntervalSeconds = 0.01;
    const calls = trackInterrupts(agent);
    db.refreshSessionTurnLease = async () => false;
    const observed = { started: false };
    agent.runLoop = async (_message, _system, history) => {
      observed.started = true;
      return loopUntilInterrupted(agent, history, "refresh loss");
    };

    const result = await agent.runConversation("new message", {
      conversationHistory: [{ role: "user", content: "seed" }],
    });

    expect(observed.started).toBe(true);
    expect(result.interrupted).toBe(true);
    expect(calls.length).toBeGreaterThan(0);
    expect(calls[0][1]).toBe(true);
  });

  it("runConversationInterruptsWhenLeaseRefreshErrors", async () => {
    const db = new StubStore();
    const agent = agentWithDb(db);
    agent.leaseRefreshIntervalSeconds = 0.01;
    const calls = trackInterrupts(agent);
    db.refreshSessionTurnLease = async () => {
      throw new Error("database unavailable");
    };
    agent.runLoop = async (_message, _system, history) => loopUntilInterrupted(agent, history, "refresh error");

    const result = await agent.runConversation("new message", {
      conversationHistory: [{ role: "user", content: "seed" }],
    });

    expect(result.interrupted).toBe(true);
    expect(calls.length).toBeGreaterThan(0);
    expect(calls[0][1]).toBe(true);
  });

  it("refreshErrorAfterLoopCompletionDoesNotPoisonNextTurn", async () => {
    const db = new StubStore();
    const agent = agentWithDb(db);
    agent.leaseRefreshIntervalSeconds = 0.01;
    const refreshStarted = latch();
    const releaseRefresh = latch();
    const interruptStarted = latch();
    const interruptDone = latch();
    const calls: Array<[string | null | undefined, boolean | undefined]> = [];
    // An interrupt that is still under way when the loop returns.
    const interrupt = agent.interrupt;
    agent.interrupt = async (message?: string | null, options?: InterruptOptions) => {
      calls.push([message, options?.hardCancel]);
      interruptStarted.resolve();
      await within(releaseRefresh.promise, 2_000);
      await interrupt(message);
      interruptDone.resolve();
    };
    db.refreshSessionTurnLease = async () => {
      refreshStarted.resolve();
      throw new Error("database unavailable");
    };
    agent.runLoop = async (_message, _system, history) => {
      expect(await within(refreshStarted.promise, 2_000)).toBe(true);
      expect(await within(interruptStarted.promise, 2_000)).toBe(true);
      // The interrupt goes on only after the loop has returned.
      setImmediate(() => releaseRefresh.resolve());
      return okLoop(history);
    };

    const result = await agent.runConversation("new message", {
      conversationHistory: [{ role: "user", content: "seed" }],
    });
    // The stray interrupt has landed.
    await interruptDone.promise;

    expect(result.finalResponse).toBe("ok");
    expect(calls).toHaveLength(1);
    expect(calls[0][1]).toBe(true);
    expect(agent.lastTurn?.interruptRequested).toBe(false);
    expect(agent.lastTurn?.interruptMessage).toBeNull();

    // And the next turn runs to completion.
    db.refreshSessionTurnLease = async () => true;
    agent.runLoop = async (_message, _system, history) => okLoop(history, "next");
    const next = await agent.runConversation("next message", { conversationHistory: [] });
    expect(next.finalResponse).toBe("next");
    expect(next.interrupted).toBe(false);
    expect(next.completed).toBe(true);
  });

  it("lateRefreshMissAfterReleaseDoesNotInterrupt", async () => {
    const db = new StubStore();
    const agent = agentWithDb(db);
    agent.leaseRefreshIntervalSeconds = 0.01;
    const released = latch();
    const refreshing = latch();
    const missed = latch();
    const calls = trackInterrupts(agent);
    db.refreshSessionTurnLease = async () => {
      refreshing.resolve();
      await within(released.promise, 2_000);
      missed.resolve();
      return false;
    };
    const originalRelease = db.releaseSessionTurnLease.bind(db);
    db.releaseSessionTurnLease = async (sessionId: string, holder: string) => {
      await originalRelease(sessionId, holder);
      released.resolve();
    };
    agent.runLoop = async (_message, _system, history) => {
      // A refresh is under way when the loop returns; it answers "missed" after the release.
      expect(await within(refreshing.promise, 2_000)).toBe(true);
      return okLoop(history);
    };

    const result = await agent.runConversation("new message", {
      conversationHistory: [{ role: "user", content: "seed" }],
    });
    // The late miss has been answered, and its handling has had a turn of the event loop.
    await missed.promise;
    await new Promise((resolve) => setImmediate(resolve));

    expect(released.settled).toBe(true);
    expect(result.finalResponse).toBe("ok");
    expect(calls).toEqual([]);
    expect(agent.lastTurn?.interruptRequested).toBe(false);
  });

  it("runConversationExposesHolderForFencedFlush", async () => {
    // The acquired holder is visible to persist, then cleared on release.
    const db = new StubStore();
    const captured: {
      sessionId?: string;
      turnLeaseHolder?: string | null;
      count?: number;
      active?: string | null;
      flushOk?: boolean;
    } = {};
    db.appendMessagesBatch = async (sessionId: string, messages: ConversationMessage[], options?: AppendBatchOptions) => {
      captured.sessionId = sessionId;
      captured.turnLeaseHolder = options?.turnLeaseHolder;
      captured.count = messages.length;
      return messages.map((_, index) => index + 1);
    };
    const agent = agentWithDb(db);
    db.acquireSessionTurnLease = async (sessionId: string, holder: string, options?: LeaseAcquireOptions) => {
      db.events.push(["acquire", sessionId, holder]);
      options?.onWait?.(0);
      return true;
    };
    agent.runLoop = async (_message, _system, history, { turn }) => {
      captured.active = turn.holder;
      const flushed = await turn.flush(
        [
          { role: "user", content: "hi" },
          { role: "assistant", content: "done" },
        ],
        [],
      );
      captured.flushOk = flushed.kind === "ok";
      return okLoop(history, "done");
    };

    const result = await agent.runConversation("new message", {
      conversationHistory: [{ role: "user", content: "durable latest" }],
    });

    expect(result.finalResponse).toBe("done");
    expect(captured.flushOk).toBe(true);
    expect(captured.active).toBeTruthy();
    expect(captured.active?.startsWith("pid=")).toBe(true);
    expect(captured.turnLeaseHolder).toBe(captured.active);
    expect(captured.sessionId).toBe("compressed-tip");
    expect(captured.count).toBe(2);
    expect(agent.lastTurn?.holder).toBeNull();
    expect(db.eventNames()).toEqual(["acquire", "resolve", "reload", "release"]);
  });
});
