// The message.queued notices of new inbox rows: each announced once by the announcer of the
// thread that runs their turns, and a row of its own that a turn takes before its wake-up arrives
// announced at that moment, ahead of the turn's events.
import { describe, expect, it } from "vitest";
import type { EventKind, EventPublisher, GatewayEvent } from "../../src/bus/types.js";
import { ANNOUNCER_FIELD, QueuedAnnouncer, queuedNoticeOf } from "../../src/gateway/queued-notices.js";
import type { InboxRow } from "../../src/state/types.js";

function recordingBus(): EventPublisher & { published: Array<{ sessionId: string; kind: EventKind; data: Record<string, unknown> }> } {
  const published: Array<{ sessionId: string; kind: EventKind; data: Record<string, unknown> }> = [];
  return {
    published,
    async publish(sessionId, kind, data): Promise<GatewayEvent> {
      published.push({ sessionId, kind, data });
      return { id: `${published.length}-0`, session_id: sessionId, kind, data, ts: Date.now() };
    },
    publishLive(sessionId, kind, data): void {
      published.push({ sessionId, kind, data });
    },
  };
}

function row(id: number, payload: Record<string, unknown> = {}): InboxRow {
  return {
    id,
    platform: "webhook",
    platform_message_id: `m-${id}`,
    session_id: "s",
    payload: { text: `hello ${id}`, userId: "u-1", ...payload },
    status: "pending",
    received_at: 0,
    enqueued_at: null,
    completed_at: null,
    reply: null,
    reason: null,
  };
}

describe("queued notices", () => {
  it("describe a row as the message.queued event says it", () => {
    expect(queuedNoticeOf(row(7))).toEqual({
      sessionId: "s",
      data: { inbox_id: 7, platform: "webhook", platform_message_id: "m-7", text: "hello 7", user_id: "u-1" },
    });
  });

  it("are published once each, in order, whether the wake-up or a turn taking the row comes first", () => {
    const bus = recordingBus();
    const announcer = new QueuedAnnouncer(bus);
    const own = { [ANNOUNCER_FIELD]: announcer.id };
    announcer.announce([queuedNoticeOf(row(1, own))]);
    // A turn takes row 2 before its wake-up arrives: announced now; its wake-up later adds nothing.
    announcer.taking([row(1, own), row(2, own)]);
    announcer.announce([queuedNoticeOf(row(2, own)), queuedNoticeOf(row(3, own))]);
    expect(bus.published.map((event) => [event.kind, event.data.inbox_id])).toEqual([
      ["message.queued", 1],
      ["message.queued", 2],
      ["message.queued", 3],
    ]);
  });

  it("leave rows recorded for another announcer (or by another process) to it", () => {
    const bus = recordingBus();
    const announcer = new QueuedAnnouncer(bus);
    announcer.taking([row(1), row(2, { [ANNOUNCER_FIELD]: new QueuedAnnouncer(bus).id })]);
    expect(bus.published).toEqual([]);
  });

  it("remember a bounded number of announced rows", () => {
    const bus = recordingBus();
    const announcer = new QueuedAnnouncer(bus);
    for (let id = 1; id <= 10_001; id++) announcer.announce([queuedNoticeOf(row(id))]);
    // The oldest was forgotten, the newest are still known.
    announcer.announce([queuedNoticeOf(row(1)), queuedNoticeOf(row(10_001))]);
    expect(bus.published).toHaveLength(10_002);
    expect(bus.published.at(-1)?.data.inbox_id).toBe(1);
  });
});
