// The Slack benchmark's bookkeeping: which bot message answered which mention, what counts as a
// duplicate or a lost reply, and the fake Web API it reads them from.
import { afterEach, describe, expect, it } from "vitest";
import { FakeSlackApi } from "../../bench/lib/fake-slack-api.js";
import { diffCounts, parseCommandStats } from "../../bench/lib/redis-commands.js";
import { ReplyTracker, summarizeReplies } from "../../bench/lib/slack-replies.js";

const TOKEN = "xoxb-test-token";

async function call(fake: FakeSlackApi, method: string, params: Record<string, string>, token = TOKEN): Promise<Record<string, unknown>> {
  const res = await fetch(`${fake.url}${method}`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(params).toString(),
  });
  return (await res.json()) as Record<string, unknown>;
}

describe("the Slack benchmark's reply tracking", () => {
  let fake: FakeSlackApi | null = null;
  afterEach(async () => {
    await fake?.close();
    fake = null;
  });

  it("attributes streamed posts, final edits, duplicates and lost replies to their mentions", async () => {
    fake = await FakeSlackApi.start(TOKEN);
    const tracker = new ReplyTracker();
    fake.listen(tracker);
    const sent = process.hrtime.bigint();
    const first = tracker.track({ eventId: "Ev1", channel: "C1", threadTs: "1.000001", expectedReply: "Echo: one" }, sent);
    const second = tracker.track({ eventId: "Ev2", channel: "C1", threadTs: "1.000001", expectedReply: "Echo: two" }, sent);
    const never = tracker.track({ eventId: "Ev3", channel: "C2", threadTs: "2.000001", expectedReply: "Echo: three" }, sent);
    const refused = tracker.track({ eventId: "Ev4", channel: "C3", threadTs: "3.000001", expectedReply: "Echo: four" }, sent);
    for (const m of [first, second, never]) {
      m.status = 200;
      m.ackNs = sent;
    }
    refused.status = 503;
    refused.ackNs = sent;

    // A streamed reply: a partial post, then the final text as an edit.
    const posted = await call(fake, "chat.postMessage", { channel: "C1", thread_ts: "1.000001", text: "Echo:" });
    expect(first.firstPostNs).not.toBeNull();
    expect(first.finalNs).toBeNull();
    const waiting = tracker.waitFinal(first, 5_000);
    await call(fake, "chat.update", { channel: "C1", ts: String(posted.ts), text: "Echo: one" });
    await expect(waiting).resolves.toBe(true);

    // The second mention answered in one post, then posted again: a duplicate.
    await call(fake, "chat.postMessage", { channel: "C1", thread_ts: "1.000001", text: "Echo: two" });
    await call(fake, "chat.postMessage", { channel: "C1", thread_ts: "1.000001", text: "Echo: two" });
    // The right text in the wrong thread answers nothing.
    await call(fake, "chat.postMessage", { channel: "C9", thread_ts: "9.000001", text: "Echo: three" });

    await expect(tracker.waitFinal(never, 50)).resolves.toBe(false);
    const summary = summarizeReplies([first, second, never, refused]);
    expect(summary).toMatchObject({ sent: 4, refused: 1, refusedBy: { "503": 1 }, lost: 1, duplicates: 1 });
    expect(summary.finalReplyMs).toHaveLength(2);
    expect(summary.firstReplyMs).toHaveLength(2);
    expect(tracker.unexpectedPosts).toBe(2);
    expect(fake.callCounts()).toEqual({ "chat.postMessage": 4, "chat.update": 1 });
  });

  it("refuses a wrong bot token the way Slack does, and shows nothing", async () => {
    fake = await FakeSlackApi.start(TOKEN);
    const tracker = new ReplyTracker();
    fake.listen(tracker);
    const m = tracker.track({ eventId: "Ev1", channel: "C1", threadTs: "1.000001", expectedReply: "Echo: one" }, process.hrtime.bigint());
    await expect(call(fake, "chat.postMessage", { channel: "C1", thread_ts: "1.000001", text: "Echo: one" }, "xoxb-wrong")).resolves.toEqual({
      ok: false,
      error: "invalid_auth",
    });
    await expect(call(fake, "chat.delete", { channel: "C1", ts: "1" })).resolves.toEqual({ ok: false, error: "unknown_method" });
    expect(m.firstPostNs).toBeNull();
    expect(m.finalNs).toBeNull();
  });

  it("reads command counts from INFO commandstats and takes their difference", () => {
    const before = parseCommandStats("# Commandstats\r\ncmdstat_get:calls=3,usec=5\r\ncmdstat_evalsha:calls=10,usec=99\r\n");
    const after = parseCommandStats("# Commandstats\r\ncmdstat_get:calls=7,usec=9\r\ncmdstat_evalsha:calls=10,usec=99\r\ncmdstat_client|setname:calls=2,usec=1\r\n");
    expect(diffCounts(before, after)).toEqual({ get: 4, "client|setname": 2 });
  });
});
