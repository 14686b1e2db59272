// Picking one request's turn out of its session's events.
import { describe, expect, it } from "vitest";
import { TurnEventTracker } from "../../src/clients/openai/index.js";
import type { EventKind } from "../../src/bus/types.js";
import type { GatewayEvent } from "../../src/gateway/types.js";

let seq = 0;
function event(kind: EventKind, data: Record<string, unknown>): GatewayEvent {
  seq++;
  return { id: `1-${seq}`, session_id: "s", kind, data, ts: seq };
}

describe("TurnEventTracker", () => {
  it("forwards only the deltas of the turn that consumed our inbox row, held until bound", async () => {
    const deltas: string[] = [];
    const tracker = new TurnEventTracker((text) => deltas.push(text));
    // Another request's turn, then ours, arriving before we know our inbox id.
    tracker.offer(event("turn.started", { inbox_ids: [6] }));
    tracker.offer(event("delta", { text: "other ", inbox_ids: [6] }));
    tracker.offer(event("turn.completed", { inbox_ids: [6], final_response: "other reply" }));
    tracker.offer(event("message.queued", { inbox_id: 7 }));
    tracker.offer(event("turn.started", { inbox_ids: [7] }));
    tracker.offer(event("delta", { text: "Echo:", inbox_ids: [7] }));
    expect(deltas).toEqual([]);
    tracker.bind(7);
    tracker.offer(event("delta", { text: " hi", inbox_ids: [7] }));
    tracker.offer(event("turn.completed", { inbox_ids: [7], final_response: "Echo: hi there" }));
    tracker.offer(event("delta", { text: " late", inbox_ids: [7] }));
    expect(deltas).toEqual(["Echo:", " hi"]);
    const end = await tracker.end;
    expect(end).toEqual({ kind: "completed", finalResponse: "Echo: hi there", error: null });
    expect(tracker.remainderOf(end.finalResponse)).toBe(" there");
  });

  it("follows a turn our message was steered into from the moment it joined", async () => {
    const deltas: string[] = [];
    const tracker = new TurnEventTracker((text) => deltas.push(text));
    tracker.bind(9);
    tracker.offer(event("turn.started", { inbox_ids: [8] }));
    tracker.offer(event("delta", { text: "Checking", inbox_ids: [8] }));
    tracker.offer(event("tool.started", { inbox_ids: [8], name: "clock" }));
    tracker.offer(event("turn.steered", { inbox_ids: [8, 9] }));
    tracker.offer(event("delta", { text: "Noon", inbox_ids: [8, 9] }));
    tracker.offer(event("turn.completed", { inbox_ids: [8, 9], final_response: "Noon in Paris" }));
    expect(deltas).toEqual(["Noon"]);
    const end = await tracker.end;
    expect(end.finalResponse).toBe("Noon in Paris");
    expect(tracker.remainderOf(end.finalResponse)).toBe(" in Paris");
  });

  it("ignores deltas before our turn started and computes the remainder against the last model call", () => {
    const deltas: string[] = [];
    const tracker = new TurnEventTracker((text) => deltas.push(text));
    tracker.bind(3);
    tracker.offer(event("delta", { text: "stray", inbox_ids: [] }));
    tracker.offer(event("turn.started", { inbox_ids: [3] }));
    tracker.offer(event("delta", { text: "Let me look.", inbox_ids: [3] }));
    tracker.offer(event("tool.started", { inbox_ids: [3], name: "clock" }));
    tracker.offer(event("tool.finished", { inbox_ids: [3], name: "clock" }));
    tracker.offer(event("delta", { text: "It is", inbox_ids: [3] }));
    expect(deltas).toEqual(["Let me look.", "It is"]);
    expect(tracker.remainderOf("It is noon")).toBe(" noon");
    // A final text that does not continue what was streamed is not appended.
    expect(tracker.remainderOf("Something else")).toBe("");
    expect(tracker.remainderOf(null)).toBe("");
  });

  it("ends on the command event that answered our inbox row", async () => {
    const tracker = new TurnEventTracker(() => undefined);
    tracker.bind(2);
    tracker.offer(event("command", { inbox_ids: [2], command: "help", reply: "Commands: ..." }));
    expect(await tracker.end).toEqual({ kind: "completed", finalResponse: "Commands: ...", error: null });
  });

  it("ends on turn.failed and turn.interrupted naming our inbox row (a collected turn names several)", async () => {
    const failed = new TurnEventTracker(() => undefined);
    failed.bind(9);
    failed.offer(event("turn.failed", { inbox_ids: [8, 9], error: "model down" }));
    expect(await failed.end).toEqual({ kind: "failed", finalResponse: null, error: "model down" });

    const interrupted = new TurnEventTracker(() => undefined);
    interrupted.bind(4);
    interrupted.offer(event("turn.interrupted", { inbox_ids: [5] }));
    interrupted.offer(event("turn.interrupted", { inbox_ids: [4], final_response: "partial" }));
    expect(await interrupted.end).toMatchObject({ kind: "interrupted", finalResponse: "partial" });
  });
  it("skips text already streamed, stops a segment at a missed frame, and the final text fills the rest", async () => {
    const deltas: string[] = [];
    const tracker = new TurnEventTracker((text) => deltas.push(text));
    tracker.bind(4);
    tracker.offer(event("turn.started", { inbox_ids: [4] }));
    tracker.offer(event("delta", { text: "Echo: one", offset: 0, inbox_ids: [4] }));
    tracker.offer(event("delta", { text: "one two", offset: 6, inbox_ids: [4] })); // overlaps
    tracker.offer(event("delta", { text: " four", offset: 17, inbox_ids: [4] })); // " three" was missed
    tracker.offer(event("delta", { text: " five", offset: 22, inbox_ids: [4] }));
    tracker.offer(event("turn.completed", { inbox_ids: [4], final_response: "Echo: one two three four five" }));
    expect(deltas).toEqual(["Echo: one", " two"]);
    const end = await tracker.end;
    expect(tracker.remainderOf(end.finalResponse)).toBe(" three four five");
    expect(deltas.join("") + tracker.remainderOf(end.finalResponse)).toBe("Echo: one two three four five");
  });

  it("streams a new segment after a tool call even when the previous one had a gap", () => {
    const deltas: string[] = [];
    const tracker = new TurnEventTracker((text) => deltas.push(text));
    tracker.bind(5);
    tracker.offer(event("turn.started", { inbox_ids: [5] }));
    tracker.offer(event("delta", { text: "look", offset: 4, inbox_ids: [5] }));
    tracker.offer(event("tool.started", { inbox_ids: [5], name: "clock" }));
    tracker.offer(event("delta", { text: "Noon", offset: 0, inbox_ids: [5] }));
    expect(deltas).toEqual(["Noon"]);
    expect(tracker.currentSegment).toBe("Noon");
  });
});
