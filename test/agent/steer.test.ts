// The loop's side of busy mode 'steer', on a real SessionDB and a scripted model: the steer hook
// is asked before each model step after the first, what it returns is stored and sent at that
// point, a failing read leaves the turn running, and an input already stored is not added twice.
import { afterEach, describe, expect, it } from "vitest";
import { Agent } from "../../src/agent/agent.js";
import type { AdmittedUserInput } from "../../src/agent/turn-types.js";
import type { AgentEvent } from "../../src/agent/types.js";
import { liveStore, type LiveStore } from "./support/live-store.js";
import { ScriptedProvider, callTool, reply } from "./support/scripted-provider.js";

let live: LiveStore | null = null;
afterEach(async () => {
  await live?.cleanup();
  live = null;
});

async function setup(provider: ScriptedProvider) {
  live = liveStore();
  const db = await live.open();
  const events: AgentEvent[] = [];
  const agent = new Agent({ store: db, provider, sessionId: "s1", platform: "test", onEvent: (e) => events.push(e) });
  return { db, agent, events };
}

const input = (text: string, id: string): AdmittedUserInput => ({ text, platformMessageId: id, displayKind: "chat", displayMetadata: { user_id: "u2" } });

describe("steering inputs into a running turn", () => {
  it("asks before each later model step and sends what arrived after the tool result", async () => {
    const provider = new ScriptedProvider([callTool("c1", "get_current_time", {}), callTool("c2", "get_current_time", {}), reply("done")]);
    const { db, agent, events } = await setup(provider);
    const asked: number[] = [];
    const queue: AdmittedUserInput[][] = [[input("second", "p2")], []];
    const result = await agent.runConversation(null, {
      admittedInput: async () => ({
        messages: [input("first", "p1")],
        steer: async () => {
          asked.push(provider.requests.length);
          return queue.shift() ?? [];
        },
      }),
    });
    expect(result.completed).toBe(true);
    // Not before the first step; before steps 2 and 3.
    expect(asked).toEqual([1, 2]);
    expect(provider.requests[1].messages.filter((m) => m.role !== "system").map((m) => `${m.role}:${m.content ?? ""}`)).toEqual([
      "user:first",
      "assistant:",
      expect.stringMatching(/^tool:/),
      "user:second",
    ]);
    const rows = await db.getMessages("s1");
    expect(rows.map((r) => r.role)).toEqual(["user", "assistant", "tool", "user", "assistant", "tool", "assistant"]);
    expect(rows[3]).toMatchObject({ content: "second", platform_message_id: "p2", display_kind: "chat", display_metadata: { user_id: "u2" } });
    expect(events.filter((e) => e.kind === "turn.steered").map((e) => e.data.platform_message_ids)).toEqual([["p2"]]);
  });

  it("goes on when the read fails, and never adds an input the transcript already has", async () => {
    const provider = new ScriptedProvider([callTool("c1", "get_current_time", {}), callTool("c2", "get_current_time", {}), reply("done")]);
    const { db, agent, events } = await setup(provider);
    let calls = 0;
    const result = await agent.runConversation(null, {
      admittedInput: async () => ({
        messages: [input("first", "p1")],
        steer: async () => {
          calls++;
          if (calls === 1) throw new Error("database is locked");
          return [input("first again", "p1")];
        },
      }),
    });
    expect(result.completed).toBe(true);
    expect(calls).toBe(2);
    expect(events.some((e) => e.kind === "status" && String(e.data.text).includes("database is locked"))).toBe(true);
    expect(events.some((e) => e.kind === "turn.steered")).toBe(false);
    const users = (await db.getMessages("s1")).filter((r) => r.role === "user");
    expect(users.map((r) => r.content)).toEqual(["first"]);
  });
});
