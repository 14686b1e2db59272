// The chat completion request parser and the session / idempotency headers.
import { describe, expect, it } from "vitest";
import { idempotencyKeyHeader, parseChatRequest, RequestError, sessionIdHeader } from "../../src/clients/openai/index.js";

function errorOf(fn: () => unknown): RequestError {
  try {
    fn();
  } catch (err) {
    if (err instanceof RequestError) return err;
    throw err;
  }
  throw new Error("expected a RequestError");
}

describe("parseChatRequest", () => {
  it("takes the last user message as the input and the messages before it as history", () => {
    const request = parseChatRequest({
      model: "m",
      messages: [
        { role: "system", content: "be brief" },
        { role: "user", content: "first" },
        { role: "assistant", content: "one" },
        { role: "user", content: [{ type: "text", text: "second" }, { type: "text", text: "part" }] },
      ],
      temperature: 0.2,
      top_p: 1,
      stream: true,
      stream_options: { include_usage: true },
      user: "u-1",
    });
    expect(request).toEqual({
      model: "m",
      stream: true,
      includeUsage: true,
      userId: "u-1",
      input: "second\npart",
      imageUrls: [],
      history: [
        { role: "system", content: "be brief" },
        { role: "user", content: "first" },
        { role: "assistant", content: "one" },
      ],
    });
  });

  it("takes the image parts of the new message, in order, and keeps earlier messages' text only", () => {
    const request = parseChatRequest({
      model: "m",
      messages: [
        { role: "user", content: [{ type: "text", text: "old" }, { type: "image_url", image_url: { url: "https://example.com/old.png" } }] },
        { role: "assistant", content: "seen" },
        { role: "user", content: [{ type: "image_url", image_url: { url: "data:image/png;base64,AAAA", detail: "low" } }, { type: "text", text: "compare" }, { type: "image_url", image_url: { url: "https://example.com/b.png" } }] },
      ],
    });
    expect(request.input).toBe("compare");
    expect(request.imageUrls).toEqual(["data:image/png;base64,AAAA", "https://example.com/b.png"]);
    expect(request.history).toEqual([{ role: "user", content: "old" }, { role: "assistant", content: "seen" }]);
  });

  it("leaves tool messages and content-less assistant turns out of the history, and maps developer to system", () => {
    const request = parseChatRequest({
      model: "m",
      messages: [
        { role: "developer", content: "rules" },
        { role: "user", content: "q" },
        { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: "{}" } }] },
        { role: "tool", tool_call_id: "c1", content: "42" },
        { role: "assistant", content: "it is 42" },
        { role: "user", content: "thanks" },
      ],
    });
    expect(request.input).toBe("thanks");
    expect(request.stream).toBe(false);
    expect(request.history).toEqual([
      { role: "system", content: "rules" },
      { role: "user", content: "q" },
      { role: "assistant", content: "it is 42" },
    ]);
  });

  it.each([
    [{ messages: [{ role: "user", content: "x" }] }, "model"],
    [{ model: 3, messages: [{ role: "user", content: "x" }] }, "model"],
    [{ model: "m" }, "messages"],
    [{ model: "m", messages: [] }, "messages"],
    [{ model: "m", messages: [{ role: "robot", content: "x" }] }, "messages[0].role"],
    [{ model: "m", messages: [{ role: "user", content: 5 }] }, "messages[0].content"],
    [{ model: "m", messages: [{ role: "user", content: [{ type: "input_audio", input_audio: { data: "", format: "wav" } }] }] }, "messages[0].content"],
    [{ model: "m", messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "" } }] }] }, "messages[0].content[0].image_url.url"],
    [{ model: "m", messages: [{ role: "system", content: [{ type: "image_url", image_url: { url: "https://x/y.png" } }] }, { role: "user", content: "x" }] }, "messages[0].content"],
    [{ model: "m", messages: [{ role: "user" }] }, "messages[0].content"],
    [{ model: "m", messages: [{ role: "system", content: "only a system message" }] }, "messages"],
    [{ model: "m", messages: [{ role: "user", content: "x" }], stream: "yes" }, "stream"],
  ])("rejects %j naming %s", (body, field) => {
    const error = errorOf(() => parseChatRequest(body));
    expect(error.code).toBe("invalid_body");
    expect(error.message).toContain(`${field}:`);
  });

  it.each([null, [], "text", 42])("rejects a body that is not an object: %j", (body) => {
    expect(errorOf(() => parseChatRequest(body)).message).toMatch(/JSON object/);
  });
});

describe("headers", () => {
  it("accepts session ids of 1-128 characters of [A-Za-z0-9._:-]", () => {
    expect(sessionIdHeader(undefined)).toBeUndefined();
    expect(sessionIdHeader("a")).toBe("a");
    expect(sessionIdHeader("user-42:chat.7_x")).toBe("user-42:chat.7_x");
    expect(sessionIdHeader("x".repeat(128))).toBe("x".repeat(128));
  });

  it.each(["", "x".repeat(129), "has space", "slash/y", "ünï", "a\tb"])("rejects the session id %j", (value) => {
    expect(errorOf(() => sessionIdHeader(value)).code).toBe("invalid_session_id");
  });

  it("accepts printable idempotency keys up to 255 characters and rejects others", () => {
    expect(idempotencyKeyHeader(undefined)).toBeUndefined();
    expect(idempotencyKeyHeader("k-1 retry/2")).toBe("k-1 retry/2");
    expect(idempotencyKeyHeader("k".repeat(255))).toBe("k".repeat(255));
    for (const bad of ["", " lead", "k".repeat(256), "tab\tx"]) expect(errorOf(() => idempotencyKeyHeader(bad)).code).toBe("invalid_idempotency_key");
  });
});
