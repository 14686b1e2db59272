// The turn options a wake-up uses to skip its reads: giveUpWhenHeld (a live holder hands the work
// on, so nothing waits) and readHeadOnRelease (the next head, read in the release's transaction).
import { afterEach, describe, expect, it } from "vitest";
import { Agent } from "../../src/agent/agent.js";
import { EchoProvider } from "../../src/agent/providers/echo.js";
import type { AgentEvent } from "../../src/agent/types.js";
import { storeBackends } from "../support/store-backends.js";
import { liveStore, type LiveStore } from "./support/live-store.js";

let live: LiveStore | null = null;
afterEach(async () => {
  await live?.cleanup();
  live = null;
});

describe.each(storeBackends)("turn options for wake-ups ($name)", (backend) => {
  it("giveUpWhenHeld: a live holder ends the turn at once, heldElsewhere, with nothing emitted or held", async () => {
    live = liveStore(backend, "release-read");
    const db = await live.open();
    await db.createSession("conv", { source: "test" });
    expect(await db.tryAcquireSessionTurnLease("conv", "other-turn", { ttlSeconds: 60 })).toBe(true);
    const events: AgentEvent[] = [];
    const agent = new Agent({ store: db, provider: new EchoProvider(), sessionId: "conv", platform: "test", onEvent: (e) => events.push(e) });
    const result = await agent.runConversation("hello", { giveUpWhenHeld: true, readHeadOnRelease: true });
    expect(result).toMatchObject({ heldElsewhere: true, skipped: true, failed: false });
    expect(result.headAfterRelease).toBeUndefined();
    // Not even a turn.waiting: a turn that waited for the holder would announce it at once.
    expect(events).toEqual([]);
    expect((await db.getSessionTurnLease("conv"))?.holder).toBe("other-turn");
    expect(await db.getMessages("conv")).toEqual([]);
  });

  it("readHeadOnRelease: the turn returns the conversation's pending head as its release found it", async () => {
    live = liveStore(backend, "release-read");
    const db = await live.open();
    await db.createSession("conv", { source: "test" });
    const waiting = (await db.recordInbound({ platform: "test", platformMessageId: "m1", sessionId: "conv", payload: { text: "next" } })).row;
    const agent = new Agent({ store: db, provider: new EchoProvider(), sessionId: "conv", platform: "test" });
    const result = await agent.runConversation("hello", { giveUpWhenHeld: true, readHeadOnRelease: true });
    expect(result.completed).toBe(true);
    expect(result.heldElsewhere).toBeUndefined();
    expect(result.headAfterRelease).toEqual(waiting);
    expect(await db.getSessionTurnLease("conv")).toBeNull();
    await db.completeInbox([waiting.id], "done", "ok");
    const second = await agent.runConversation("again", { readHeadOnRelease: true });
    expect(second.headAfterRelease).toBeNull();
    // Not asked for: not read.
    expect((await agent.runConversation("third")).headAfterRelease).toBeUndefined();
  });
});
