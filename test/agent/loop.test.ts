// The default model/tool loop, on a real SessionStore and a scripted model.
import { afterEach, describe, expect, it } from "vitest";
import { Agent } from "../../src/agent/agent.js";
import type { AgentOptions } from "../../src/agent/turn-types.js";
import type { AgentEvent, StatusKind } from "../../src/agent/types.js";
import type { SessionStore } from "../../src/state/index.js";
import { latch, until, within } from "./support/async.js";
import { liveStore, type LiveStore } from "./support/live-store.js";
import { ScriptedProvider, callTool, reply, streaming, type StreamProgress } from "./support/scripted-provider.js";

let live: LiveStore | null = null;
afterEach(async () => {
  await live?.cleanup();
  live = null;
});

interface Harness {
  db: SessionStore;
  agent: Agent;
  events: AgentEvent[];
  statuses: Array<[StatusKind, string]>;
}

async function harness(provider: ScriptedProvider, options: Partial<AgentOptions> = {}): Promise<Harness> {
  live = liveStore();
  const db = await live.open();
  const events: AgentEvent[] = [];
  const statuses: Array<[StatusKind, string]> = [];
  const agent = new Agent({
    store: db,
    provider,
    sessionId: "s1",
    platform: "test",
    systemPrompt: "You are a test assistant.",
    onEvent: (event) => events.push(event),
    statusCallback: (kind, text) => statuses.push([kind, text]),
    ...options,
  });
  return { db, agent, events, statuses };
}

async function stored(db: SessionStore, sessionId = "s1"): Promise<Array<[string, string | null]>> {
  return (await db.getMessages(sessionId)).map((row) => [row.role, row.content]);
}

const CHUNKS = Array.from({ length: 60 }, (_, index) => `w${index} `);

describe("the model/tool loop", () => {
  it("runs a tool round trip and stores every step", async () => {
    const provider = new ScriptedProvider([
      callTool("call-1", "get_current_time", { timezone: "UTC" }),
      async (request) => {
        const last = request.messages.at(-1);
        const iso = last?.role === "tool" ? (JSON.parse(last.content ?? "{}") as { iso?: string }).iso : undefined;
        return reply(`The time is ${iso ?? "unknown"}`);
      },
    ]);
    const { db, agent, events } = await harness(provider);

    const result = await agent.runConversation("what time is it?", { conversationHistory: [] });

    expect(result.completed).toBe(true);
    expect(result.failed).toBe(false);
    expect(result.apiCalls).toBe(2);
    expect(result.finalResponse).toMatch(/^The time is \d{4}-\d\d-\d\dT/);
    expect(provider.requests[0].tools?.map((tool) => tool.name)).toContain("get_current_time");
    expect(provider.requests[0].messages).toEqual([
      { role: "system", content: "You are a test assistant." },
      { role: "user", content: "what time is it?" },
    ]);
    const second = provider.requests[1].messages;
    expect(second.map((m) => m.role)).toEqual(["system", "user", "assistant", "tool"]);
    expect(second[2].tool_calls?.[0].id).toBe("call-1");
    expect(second[3].tool_call_id).toBe("call-1");

    const rows = await db.getMessages("s1");
    expect(rows.map((row) => row.role)).toEqual(["user", "assistant", "tool", "assistant"]);
    expect(rows[1].tool_calls?.[0].function.name).toBe("get_current_time");
    expect(rows[2].tool_call_id).toBe("call-1");
    expect(rows[2].tool_name).toBe("get_current_time");
    expect(rows[3].content).toBe(result.finalResponse);
    expect(rows[3].finish_reason).toBe("stop");

    const kinds = events.map((event) => event.kind);
    expect(kinds[0]).toBe("turn.started");
    expect(kinds.at(-1)).toBe("turn.completed");
    expect(kinds.indexOf("tool.started")).toBeLessThan(kinds.indexOf("tool.finished"));
    const finished = events.find((event) => event.kind === "tool.finished");
    expect(finished?.data).toMatchObject({ call_id: "call-1", name: "get_current_time", ok: true });
    expect(events.at(-1)?.data).toEqual({ final_response: result.finalResponse });
    expect(await db.getSessionTurnLease("s1")).toBeNull();
  });

  it("returns bad tool calls to the model as tool errors", async () => {
    const provider = new ScriptedProvider([
      callTool("c1", "get_current_time", { timezone: 5 }),
      callTool("c2", "no_such_tool", {}),
      callTool("c3", "get_current_time", "{not json"),
      callTool("c4", "get_current_time", { timezone: "Not/AZone" }),
      reply("done"),
    ]);
    const { db, agent } = await harness(provider);

    const result = await agent.runConversation("go", { conversationHistory: [] });

    expect(result.completed).toBe(true);
    expect(result.finalResponse).toBe("done");
    const tools = (await db.getMessages("s1")).filter((row) => row.role === "tool").map((row) => row.content ?? "");
    expect(tools).toHaveLength(4);
    expect(tools[0]).toMatch(/^Error: invalid arguments: timezone/);
    expect(tools[1]).toBe('Error: unknown tool "no_such_tool"');
    expect(tools[2]).toMatch(/^Error: the arguments are not valid JSON/);
    expect(tools[3]).toMatch(/^Error: .*time zone/i);
    // Each error went back to the model as the tool's result.
    expect(provider.requests[4].messages.filter((m) => m.role === "tool").map((m) => m.content)).toEqual(tools);
  });

  it("stops at maxSteps, offering no tools on the last step", async () => {
    const provider = new ScriptedProvider([], callTool("again", "get_current_time", {}));
    const { db, agent } = await harness(provider, { maxSteps: 3 });

    const result = await agent.runConversation("loop forever", { conversationHistory: [] });

    expect(result.apiCalls).toBe(3);
    expect(provider.requests).toHaveLength(3);
    expect(provider.requests[0].tools).toBeDefined();
    expect(provider.requests[1].tools).toBeDefined();
    expect(provider.requests[2].tools).toBeUndefined();
    expect(result.failed).toBe(true);
    expect(result.failureReason).toBe("max_steps");
    expect(result.finalResponse).toBeTruthy();
    // The unanswerable last call is not stored: every stored call has its result.
    const rows = await db.getMessages("s1");
    expect(rows.map((row) => row.role)).toEqual(["user", "assistant", "tool", "assistant", "tool"]);
  });

  it("lets the model answer on the last step", async () => {
    const provider = new ScriptedProvider([
      callTool("a", "get_current_time", {}),
      reply("answered without more tools"),
    ]);
    const { agent } = await harness(provider, { maxSteps: 2 });
    const result = await agent.runConversation("hi", { conversationHistory: [] });
    expect(provider.requests[1].tools).toBeUndefined();
    expect(result.completed).toBe(true);
    expect(result.finalResponse).toBe("answered without more tools");
  });

  it.each([true, false])("a soft interrupt stops a streaming call at once and keeps the partial text (provider honours abort: %s)", async (honourAbort) => {
    const stream: StreamProgress = { sent: 0, ended: false };
    const provider = new ScriptedProvider([streaming(CHUNKS, 40, honourAbort, stream)]);
    const thirdDelta = latch();
    const { db, agent, events } = await harness(provider, {
      onEvent: (event) => {
        events.push(event);
        if (event.kind === "delta" && events.filter((e) => e.kind === "delta").length === 3) thirdDelta.resolve();
      },
    });

    const turn = agent.runConversation("tell me a long story", { conversationHistory: [] });
    expect(await within(thirdDelta.promise, 5_000)).toBe(true);
    agent.interrupt("enough");
    const result = await turn;

    // Ended at the interrupt, not with the stream: a provider that ignores the abort is still
    // streaming (its 60 chunks take 2.4 s), one that honours it has stopped.
    expect(stream.sent).toBeLessThan(CHUNKS.length);
    if (!honourAbort) expect(stream.ended).toBe(false);
    expect(result.interrupted).toBe(true);
    expect(result.failed).toBe(false);
    expect(result.interruptMessage).toBe("enough");
    const deltas = events.filter((event) => event.kind === "delta").map((event) => String(event.data.text));
    expect(deltas.length).toBeGreaterThan(0);
    expect(deltas.length).toBeLessThan(CHUNKS.length);
    expect(result.finalResponse).toBe(deltas.join(""));
    const rows = await db.getMessages("s1");
    expect(rows.map((row) => [row.role, row.content, row.finish_reason])).toEqual([
      ["user", "tell me a long story", null],
      ["assistant", result.finalResponse, "interrupted"],
    ]);
    expect(events.at(-1)?.kind).toBe("turn.interrupted");
    // Nothing streams after the turn ended, and the next turn is not interrupted: a provider
    // that ignores the abort sends three more chunks meanwhile, one that honours it has stopped.
    const count = deltas.length;
    if (honourAbort) await until(() => stream.ended, 5_000, "the stream to stop");
    else {
      const sentAtEnd = stream.sent;
      await until(() => stream.sent >= sentAtEnd + 3, 5_000, "three more chunks");
    }
    expect(events.filter((event) => event.kind === "delta")).toHaveLength(count);
    expect(agent.lastTurn?.interruptRequested).toBe(false);
  });

  it("a hard interrupt stops a streaming call at once and discards the partial text", async () => {
    const stream: StreamProgress = { sent: 0, ended: false };
    const provider = new ScriptedProvider([streaming(CHUNKS, 40, false, stream)]);
    const firstDelta = latch();
    const { db, agent } = await harness(provider, {
      onEvent: (event) => {
        if (event.kind === "delta") firstDelta.resolve();
      },
    });

    const turn = agent.runConversation("tell me a long story", { conversationHistory: [] });
    expect(await within(firstDelta.promise, 5_000)).toBe(true);
    agent.interrupt("stop now", { hardCancel: true });
    const result = await turn;

    // Ended while the provider, which ignores the abort, is still streaming.
    expect(stream.ended).toBe(false);
    expect(stream.sent).toBeLessThan(CHUNKS.length);
    expect(result.interrupted).toBe(true);
    expect(result.finalResponse).toBe("");
    expect(await stored(db)).toEqual([["user", "tell me a long story"]]);
  });

  it("an aborted caller signal interrupts the turn", async () => {
    const provider = new ScriptedProvider([streaming(CHUNKS, 40, false)]);
    const firstDelta = latch();
    const { agent } = await harness(provider, {
      onEvent: (event) => {
        if (event.kind === "delta") firstDelta.resolve();
      },
    });
    const controller = new AbortController();
    const turn = agent.runConversation("story", { conversationHistory: [], signal: controller.signal });
    expect(await within(firstDelta.promise, 5_000)).toBe(true);
    controller.abort();
    const result = await turn;
    expect(result.interrupted).toBe(true);
  });

  it("a failing model server fails the turn with a notice and keeps the user message", async () => {
    const provider = new ScriptedProvider([new Error("upstream exploded")]);
    const { db, agent, statuses, events } = await harness(provider);

    const result = await agent.runConversation("hello", { conversationHistory: [] });

    expect(result.failed).toBe(true);
    expect(result.completed).toBe(false);
    expect(result.failureReason).toBe("provider");
    expect(result.error).toContain("upstream exploded");
    expect(result.finalResponse).toMatch(/model server/);
    expect(await stored(db)).toEqual([["user", "hello"]]);
    expect(statuses.some(([kind]) => kind === "warn")).toBe(true);
    expect(events.at(-1)?.kind).toBe("turn.failed");
    expect(await db.getSessionTurnLease("s1")).toBeNull();
  });

  it("stores content and api_content apart, and sends the model the api text", async () => {
    const provider = new ScriptedProvider([reply("ok")]);
    const { db, agent } = await harness(provider);
    await agent.runConversation(
      { text: "hi", apiText: "[Mon 12:00] hi", platformMessageId: "m-1", displayKind: "text", displayMetadata: { author: "ann" } },
      { conversationHistory: [] },
    );
    expect(provider.requests[0].messages.at(-1)).toEqual({ role: "user", content: "[Mon 12:00] hi" });
    const [user] = await db.getMessages("s1");
    expect(user).toMatchObject({
      role: "user",
      content: "hi",
      api_content: "[Mon 12:00] hi",
      platform_message_id: "m-1",
      display_kind: "text",
      display_metadata: { author: "ann" },
    });
  });

  it("a turn whose lease is taken over mid-call fails with turn_lease and writes nothing more", async () => {
    let thief: SessionStore | null = null;
    const provider = new ScriptedProvider([
      async () => {
        // Another worker takes the lease while the model is thinking.
        const holder = agent.lastTurn?.holder ?? "";
        await db.releaseSessionTurnLease("s1", holder);
        thief = (await live?.open()) ?? null;
        await thief?.tryAcquireSessionTurnLease("s1", "pid=2:turn=thief", { ttlSeconds: 30 });
        return reply("a reply nobody may store");
      },
    ]);
    const { db, agent } = await harness(provider);

    const result = await agent.runConversation("hello", { conversationHistory: [] });

    expect(result.failed).toBe(true);
    expect(result.failureReason).toBe("turn_lease");
    expect(agent.lastTurn?.leaseLost).toBe(true);
    expect(await stored(db)).toEqual([["user", "hello"]]);
    expect((await db.getSessionTurnLease("s1"))?.holder).toBe("pid=2:turn=thief");
  });

  it("runs without a lease or writes when persistence is off", async () => {
    const provider = new ScriptedProvider([reply("ephemeral")]);
    const { db, agent } = await harness(provider, { persist: false });
    let leaseDuringTurn: unknown = "unset";
    agent.onEvent = (event) => {
      if (event.kind === "turn.started") leaseDuringTurn = agent.lastTurn?.holder;
    };
    const result = await agent.runConversation("hi", { conversationHistory: [] });
    expect(result.finalResponse).toBe("ephemeral");
    expect(leaseDuringTurn).toBeNull();
    expect(await db.getSession("s1")).toBeNull();
  });
});
