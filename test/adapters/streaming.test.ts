import { afterEach, describe, expect, it, vi } from "vitest";
import { ThrottledEditor, type MessageSink } from "../../src/adapters/shared/throttled-editor.js";
import { createSlackAdapter, createSlackStreamingReply } from "../../src/adapters/slack/index.js";
import { RateLimitedError } from "../../src/gateway/types.js";
import { FakeSlack } from "../support/fake-slack.js";
import { silentLogger } from "./support/http.js";

interface SinkCall {
  kind: "post" | "edit";
  text: string;
  at: number;
}

function recordingSink(options: { postDelayMs?: number; failEditsWith?: () => Error | null } = {}) {
  const calls: SinkCall[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const track = async <T>(work: () => Promise<T>): Promise<T> => {
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    try {
      return await work();
    } finally {
      inFlight--;
    }
  };
  const sink: MessageSink = {
    post: (text) =>
      track(async () => {
        calls.push({ kind: "post", text, at: Date.now() });
        if (options.postDelayMs) await new Promise((r) => setTimeout(r, options.postDelayMs));
        return "m1";
      }),
    edit: (_id, text) =>
      track(async () => {
        calls.push({ kind: "edit", text, at: Date.now() });
        const error = options.failEditsWith?.();
        if (error) throw error;
      }),
  };
  return { sink, calls, maxInFlight: () => maxInFlight };
}

describe("ThrottledEditor", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("showFinal() edits the posted message at once, after a request in flight, and close() reports what it shows", async () => {
    vi.useFakeTimers();
    const { sink, calls, maxInFlight } = recordingSink({ postDelayMs: 300 });
    const editor = new ThrottledEditor(sink, { intervalMs: 1000 });
    editor.push("partial");
    await vi.advanceTimersByTimeAsync(10); // the post is in flight
    editor.showFinal("partial and the rest");
    await vi.advanceTimersByTimeAsync(300);
    // After the post, at once (not an interval later): one edit with the whole text.
    expect(calls.map((c) => [c.kind, c.text])).toEqual([["post", "partial"], ["edit", "partial and the rest"]]);
    expect(calls[1].at - calls[0].at).toBeLessThan(1000);
    expect(await editor.close()).toEqual({ messageId: "m1", text: "partial and the rest", shownText: "partial and the rest" });
    expect(maxInFlight()).toBe(1);
    // Nothing posted yet: showFinal leaves the text to the caller's post.
    const { sink: quiet, calls: none } = recordingSink();
    const unposted = new ThrottledEditor(quiet, { intervalMs: 1000, firstPostDelayMs: 1000 });
    unposted.push("hi");
    unposted.showFinal("hi there");
    await vi.advanceTimersByTimeAsync(2000);
    expect(none).toEqual([]);
  });

  it("posts once, then edits at most once per interval, and finishes with the full text", async () => {
    vi.useFakeTimers();
    const { sink, calls, maxInFlight } = recordingSink();
    const editor = new ThrottledEditor(sink, { intervalMs: 1000 });
    let full = "";
    for (let i = 0; i < 50; i++) {
      const delta = `w${i} `;
      full += delta;
      editor.push(delta);
      await vi.advanceTimersByTimeAsync(100);
    }
    const posts = calls.filter((c) => c.kind === "post");
    const edits = calls.filter((c) => c.kind === "edit");
    expect(posts).toHaveLength(1);
    expect(posts[0].text).toBe("w0 ");
    // 5 s of streaming at one edit per second.
    expect(edits.length).toBeGreaterThanOrEqual(3);
    expect(edits.length).toBeLessThanOrEqual(5);
    const times = calls.map((c) => c.at);
    for (let i = 1; i < times.length; i++) expect(times[i] - times[i - 1]).toBeGreaterThanOrEqual(1000);

    const done = await editor.finish();
    expect(done).toEqual({ messageId: "m1", text: full, shownText: full });
    expect(calls.at(-1)).toMatchObject({ kind: "edit", text: full });
    expect(calls.filter((c) => c.kind === "post")).toHaveLength(1);
    expect(maxInFlight()).toBe(1);
  });

  it("never posts twice while the first post is slow, and never sends two requests at once", async () => {
    vi.useFakeTimers();
    const { sink, calls, maxInFlight } = recordingSink({ postDelayMs: 2500 });
    const editor = new ThrottledEditor(sink, { intervalMs: 500 });
    for (let i = 0; i < 20; i++) {
      editor.push("x");
      await vi.advanceTimersByTimeAsync(100);
    }
    await vi.advanceTimersByTimeAsync(3000);
    expect(calls.filter((c) => c.kind === "post")).toHaveLength(1);
    expect(calls.filter((c) => c.kind === "edit").at(-1)?.text).toBe("x".repeat(20));
    expect(maxInFlight()).toBe(1);
    await editor.finish();
    expect(calls.filter((c) => c.kind === "edit")).toHaveLength(1); // nothing new to show
  });

  it("waits out a rate limit before the next preview edit", async () => {
    vi.useFakeTimers();
    let fail = true;
    const { sink, calls } = recordingSink({
      failEditsWith: () => (fail ? ((fail = false), new RateLimitedError(5000)) : null),
    });
    const errors: unknown[] = [];
    const editor = new ThrottledEditor(sink, { intervalMs: 100, onPreviewError: (e) => errors.push(e) });
    editor.push("a");
    await vi.advanceTimersByTimeAsync(0);
    editor.push("b");
    await vi.advanceTimersByTimeAsync(150); // edit -> 429
    expect(errors).toHaveLength(1);
    editor.push("c");
    await vi.advanceTimersByTimeAsync(4000);
    expect(calls.filter((c) => c.kind === "edit")).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1500);
    expect(calls.filter((c) => c.kind === "edit").map((c) => c.text)).toEqual(["ab", "abc"]);
    await editor.finish();
  });

  it("cuts previews at maxPreviewLength and close() leaves the final text to the caller", async () => {
    vi.useFakeTimers();
    const { sink, calls } = recordingSink();
    const editor = new ThrottledEditor(sink, { intervalMs: 100, maxPreviewLength: 10 });
    editor.push("0123456789abcdef");
    await vi.advanceTimersByTimeAsync(0);
    expect(calls[0].text).toBe("012345678…");
    const closed = await editor.close();
    expect(closed).toEqual({ messageId: "m1", text: "0123456789abcdef", shownText: "012345678…" });
    expect(() => editor.push("more")).toThrow();
  });

  it("holds the first post for firstPostDelayMs: a reply closed within it is never posted, a longer one posts then edits", async () => {
    vi.useFakeTimers();
    const short = recordingSink();
    const quick = new ThrottledEditor(short.sink, { intervalMs: 1000, firstPostDelayMs: 1000 });
    quick.push("Echo: ");
    quick.push("hi");
    await vi.advanceTimersByTimeAsync(999);
    expect(await quick.close()).toEqual({ messageId: null, text: "Echo: hi", shownText: null });
    await vi.advanceTimersByTimeAsync(5000);
    expect(short.calls).toEqual([]);

    const long = recordingSink();
    const slow = new ThrottledEditor(long.sink, { intervalMs: 1000, firstPostDelayMs: 1000 });
    const started = Date.now();
    for (let i = 0; i < 30; i++) {
      slow.push(`w${i} `);
      await vi.advanceTimersByTimeAsync(100);
    }
    const [post, ...edits] = long.calls;
    expect(post).toMatchObject({ kind: "post" });
    expect(post.at - started).toBe(1000);
    expect(edits.length).toBeGreaterThanOrEqual(1);
    expect(edits.every((c) => c.kind === "edit")).toBe(true);
    expect((await slow.close()).messageId).toBe("m1");
  });

  it("closeIfUnposted() ends a stream that posted nothing (it never posts after), and refuses once a post is out or in flight", async () => {
    vi.useFakeTimers();
    const quiet = recordingSink();
    const unposted = new ThrottledEditor(quiet.sink, { intervalMs: 1000, firstPostDelayMs: 1000 });
    unposted.push("Echo: hi");
    expect(unposted.closeIfUnposted()).toBe(true);
    await vi.advanceTimersByTimeAsync(5000);
    expect(quiet.calls).toEqual([]);
    expect(await unposted.close()).toEqual({ messageId: null, text: "Echo: hi", shownText: null });

    // A post in flight: its message may appear, so the final text must edit it, not post again.
    let answer: (id: string) => void = () => undefined;
    const slowSink = { post: () => new Promise<string>((resolve) => (answer = resolve)), edit: () => Promise.resolve() };
    const inFlight = new ThrottledEditor(slowSink, { intervalMs: 1000 });
    inFlight.push("a");
    await vi.advanceTimersByTimeAsync(0);
    expect(inFlight.closeIfUnposted()).toBe(false);
    answer("m9");
    await vi.advanceTimersByTimeAsync(0);
    expect(inFlight.closeIfUnposted()).toBe(false);
    expect((await inFlight.close()).messageId).toBe("m9");
  });

  it("posts the final text once when nothing was streamed before finish()", async () => {
    const { sink, calls } = recordingSink();
    const editor = new ThrottledEditor(sink, { intervalMs: 1000 });
    await expect(editor.finish("whole answer")).resolves.toEqual({ messageId: "m1", text: "whole answer", shownText: "whole answer" });
    expect(calls).toEqual([expect.objectContaining({ kind: "post", text: "whole answer" })]);
  });
});

describe("Slack streaming reply", () => {
  it("streams into one Slack message with throttled chat.update calls (real timers, fake Slack)", async () => {
    const token = "xoxb-stream-test";
    const fake = await FakeSlack.start({ botToken: token });
    try {
      const adapter = createSlackAdapter(
        { signingSecret: "s", botToken: token, apiUrl: fake.url, botUserId: "U0BOT000001" },
        { logger: silentLogger, bodyLimitBytes: 1024 },
      );
      const target = { team: "T1", channel: "C1", thread_ts: "1718900000.000100" };
      const editor = createSlackStreamingReply(adapter, target, { intervalMs: 100, firstPostDelayMs: 100 });
      let full = "";
      const started = Date.now();
      for (let i = 0; i < 40; i++) {
        full += `token${i} `;
        editor.push(`token${i} `);
        await new Promise((r) => setTimeout(r, 10));
      }
      const elapsed = Date.now() - started;
      const done = await editor.finish();
      expect(fake.callsTo("chat.postMessage")).toHaveLength(1);
      const updates = fake.callsTo("chat.update");
      expect(updates.length).toBeGreaterThanOrEqual(1);
      expect(updates.length).toBeLessThanOrEqual(Math.ceil(elapsed / 100) + 1);
      const [message] = fake.messagesIn("C1");
      expect(message.text).toBe(full);
      expect(message.thread_ts).toBe("1718900000.000100");
      expect(done.messageId).toBe(message.ts);
    } finally {
      await fake.close();
    }
  });
});
