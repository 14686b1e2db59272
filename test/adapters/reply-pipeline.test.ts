// The reply pipeline Slack and Discord configure (and the next platforms will): gate, possible-
// duplicate mark, split, parts sent once each, thread remembered; previews share the gate.
import { describe, expect, it } from "vitest";
import { ReplyPipeline, type ReplyPipelineOptions } from "../../src/adapters/shared/reply-pipeline.js";
import { RetryAfterGate } from "../../src/adapters/shared/retry-after-gate.js";
import { POSSIBLE_DUPLICATE_NOTE } from "../../src/adapters/shared/duplicate-marker.js";
import { RateLimitedError, type OutboundReply } from "../../src/gateway/types.js";

/** A platform that keeps what it was sent; `failPost` makes chosen posts answer 429. */
class Platform {
  posted: Array<{ to: string; text: string; index: number }> = [];
  edited: Array<{ id: string; text: string }> = [];
  remembered: string[] = [];
  failPost: (index: number) => boolean = () => false;
  private nextId = 1;

  pipeline(overrides: Partial<ReplyPipelineOptions> = {}): ReplyPipeline {
    return new ReplyPipeline({
      platform: "Chat",
      splitLimit: 40,
      gate: new RetryAfterGate(),
      gateKey: (target) => String(target.chat),
      parts: (reply) => ({
        post: async (text, index) => {
          if (this.failPost(index)) throw new RateLimitedError(2_000);
          this.posted.push({ to: String(reply.target.chat), text, index });
          return `m${this.nextId++}`;
        },
        edit: async (id, text) => {
          this.edited.push({ id, text });
        },
      }),
      rememberThread: (target) => this.remembered.push(String(target.chat)),
      ...overrides,
    });
  }
}

function reply(text: string, extra: Partial<OutboundReply> = {}, target: Record<string, unknown> = { chat: "c1" }): OutboundReply {
  return { deliveryId: 1, sessionId: "s", target, text, possibleDuplicate: false, ...extra };
}

describe("ReplyPipeline", () => {
  it("splits a long reply at the limit, sends every part in order and remembers the thread after the last", async () => {
    const platform = new Platform();
    const text = "word ".repeat(30).trim();
    const sent = await platform.pipeline().send(reply(text));
    expect(sent).toEqual({ platformMessageId: "m1" });
    expect(platform.posted.length).toBeGreaterThan(1);
    expect(platform.posted.every((p) => p.text.length <= 40)).toBe(true);
    expect(platform.posted.map((p) => p.text).join(" ")).toBe(text);
    expect(platform.posted.map((p) => p.index)).toEqual(platform.posted.map((_, i) => i));
    expect(platform.remembered).toEqual(["c1"]);
  });

  it("marks a possible duplicate (its own way when the platform says so), never an edit, and sends a blank reply as a note", async () => {
    const platform = new Platform();
    await platform.pipeline({ splitLimit: 200 }).send(reply("hello", { possibleDuplicate: true }));
    expect(platform.posted[0].text).toBe(`hello\n\n${POSSIBLE_DUPLICATE_NOTE}`);
    await platform.pipeline({ markPossibleDuplicate: (t) => `[resent] ${t}` }).send(reply("again", { possibleDuplicate: true }));
    expect(platform.posted[1].text).toBe("[resent] again");
    await platform.pipeline().send(reply("final", { possibleDuplicate: true }, { chat: "c1", edit_message_id: "m9" }));
    expect(platform.edited).toEqual([{ id: "m9", text: "final" }]);
    await platform.pipeline().send(reply("  \n "));
    expect(platform.posted[2].text).toBe("(empty reply)");
  });

  it("resumes after a 429 half way with the first unsent part, and holds the destination back meanwhile", async () => {
    const platform = new Platform();
    const pipeline = platform.pipeline();
    const text = "word ".repeat(30).trim();
    platform.failPost = (index) => index === 1;
    await expect(pipeline.send(reply(text))).rejects.toBeInstanceOf(RateLimitedError);
    expect(platform.posted.map((p) => p.index)).toEqual([0]);
    expect(platform.remembered).toEqual([]);

    platform.failPost = () => false;
    await pipeline.send(reply(text));
    // The first part went out once; together the parts are the reply, each once.
    expect(platform.posted.filter((p) => p.index === 0)).toHaveLength(1);
    expect(platform.posted.map((p) => p.text).join(" ")).toBe(text);
    expect(platform.remembered).toEqual(["c1"]);
  });

  it("a 429 on a preview holds back the reply to that destination only", async () => {
    const platform = new Platform();
    const pipeline = platform.pipeline();
    await expect(pipeline.postPreview({ chat: "busy" }, () => Promise.reject(new RateLimitedError(5_000)))).rejects.toBeInstanceOf(RateLimitedError);
    const held = await pipeline.send(reply("later", {}, { chat: "busy" })).catch((error: unknown) => error);
    expect(held).toBeInstanceOf(RateLimitedError);
    expect((held as RateLimitedError).message).toMatch(/^Chat reply held back/);
    expect((held as RateLimitedError).retryAfterMs).toBeGreaterThan(4_000);
    await expect(pipeline.editPreview({ chat: "busy" }, () => Promise.resolve())).rejects.toThrow(/^Chat preview edit held back/);
    await pipeline.send(reply("now", {}, { chat: "quiet" }));
    expect(platform.posted.map((p) => p.to)).toEqual(["quiet"]);
    expect(await pipeline.postPreview({ chat: "quiet" }, () => Promise.resolve("p1"))).toBe("p1");
    expect(platform.remembered).toEqual(["quiet", "quiet"]);
  });
});
