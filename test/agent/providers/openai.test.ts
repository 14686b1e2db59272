// The OpenAI-compatible provider against a local fake of the API, through the real openai client.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { OpenAIProvider, type OpenAIProviderOptions } from "../../../src/agent/providers/openai.js";
import { ProviderError, isAbortError } from "../../../src/agent/providers/errors.js";
import type { ModelMessage, ToolSpec } from "../../../src/agent/types.js";
import { startFakeOpenAI, type FakeOpenAI } from "../../support/fake-openai.js";

const API_KEY = "sk-test-provider";
const weatherTool: ToolSpec = {
  name: "get_weather",
  description: "Weather for a city",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};
const clockTool: ToolSpec = { name: "clock", description: "The time", parameters: { type: "object", properties: {} } };

function user(text: string): ModelMessage {
  return { role: "user", content: text };
}

async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error("expected the call to fail");
    },
    (err: unknown) => err,
  );
}

describe("OpenAIProvider", () => {
  let fake: FakeOpenAI;
  const provider = (options: Partial<OpenAIProviderOptions> = {}): OpenAIProvider =>
    new OpenAIProvider({ baseURL: fake.url, apiKey: API_KEY, model: "fake-model", ...options });

  beforeEach(async () => {
    fake = await startFakeOpenAI({ apiKey: API_KEY });
  });
  afterEach(async () => {
    await fake.close();
  });

  it("returns a plain (non-streamed) completion with usage", async () => {
    fake.enqueue({ kind: "text", text: "Hello there, friend." });
    const result = await provider({ temperature: 0.2 }).complete({
      messages: [{ role: "system", content: "be nice" }, user("hi")],
      signal: new AbortController().signal,
    });
    expect(result).toMatchObject({ content: "Hello there, friend.", toolCalls: [], finishReason: "stop" });
    expect(result.usage).toEqual({ promptTokens: 3, completionTokens: 3 });
    const [request] = fake.completionRequests();
    expect(request.stream).toBe(false);
    expect(request.headers.authorization).toBe(`Bearer ${API_KEY}`);
    expect(request.body).toMatchObject({
      model: "fake-model",
      temperature: 0.2,
      messages: [
        { role: "system", content: "be nice" },
        { role: "user", content: "hi" },
      ],
    });
    expect(request.body).not.toHaveProperty("tools");
  });

  it("streams deltas that concatenate to the final text", async () => {
    const chunks = ["The ", "quick ", "brown ", "fox."];
    fake.enqueue({ kind: "text", text: chunks.join(""), chunks, chunkDelayMs: 5 });
    const deltas: string[] = [];
    const result = await provider().complete({
      messages: [user("tell me")],
      signal: new AbortController().signal,
      onDelta: (text) => deltas.push(text),
    });
    expect(deltas).toEqual(chunks);
    expect(result.content).toBe("The quick brown fox.");
    expect(result.finishReason).toBe("stop");
    expect(result.usage?.completionTokens).toBe(4);
    expect(fake.completionRequests()[0].body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
  });

  it("assembles streamed tool calls by index and sends the tool result back", async () => {
    fake.enqueue({
      kind: "tool_calls",
      calls: [
        { id: "call_w", name: "get_weather", arguments: { city: "Paris", units: "metric" } },
        { id: "call_c", name: "clock", arguments: {} },
      ],
      argChunkSize: 3,
      interleave: true,
    });
    const model = provider();
    const history: ModelMessage[] = [user("weather in Paris and the time?")];
    const first = await model.complete({
      messages: history,
      tools: [weatherTool, clockTool],
      signal: new AbortController().signal,
      onDelta: () => {},
    });
    expect(first.finishReason).toBe("tool_calls");
    expect(first.content).toBeNull();
    expect(first.toolCalls).toEqual([
      { id: "call_w", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris","units":"metric"}' } },
      { id: "call_c", type: "function", function: { name: "clock", arguments: "{}" } },
    ]);
    expect(fake.completionRequests()[0].body).toMatchObject({
      tools: [
        { type: "function", function: { name: "get_weather", description: "Weather for a city", parameters: weatherTool.parameters } },
        { type: "function", function: { name: "clock" } },
      ],
    });

    history.push(
      { role: "assistant", content: first.content, tool_calls: first.toolCalls },
      { role: "tool", tool_call_id: "call_w", content: "18C, sunny" },
      { role: "tool", tool_call_id: "call_c", content: "12:00" },
    );
    fake.enqueue({ kind: "text", text: "It is 18C and noon." });
    const second = await model.complete({ messages: history, tools: [weatherTool, clockTool], signal: new AbortController().signal });
    expect(second.content).toBe("It is 18C and noon.");
    const secondBody = fake.completionRequests()[1].body as { messages: unknown[] };
    expect(secondBody.messages.slice(1)).toEqual([
      { role: "assistant", content: null, tool_calls: first.toolCalls },
      { role: "tool", tool_call_id: "call_w", content: "18C, sunny" },
      { role: "tool", tool_call_id: "call_c", content: "12:00" },
    ]);
  });

  it("waits out a 429's Retry-After, then succeeds", async () => {
    fake.enqueue({ kind: "error", status: 429, retryAfter: 1 }, { kind: "text", text: "after the wait" });
    const started = Date.now();
    const result = await provider().complete({ messages: [user("hi")], signal: new AbortController().signal, onDelta: () => {} });
    expect(result.content).toBe("after the wait");
    const [limited, retried] = fake.requests;
    expect(fake.requests.map((r) => r.status)).toEqual([429, 200]);
    expect(retried.receivedAt - limited.receivedAt).toBeGreaterThanOrEqual(950);
    expect(retried.headers["x-stainless-retry-count"]).toBe("1");
    // Waited the Retry-After, not some longer wait of its own: the bound is 10x the 1 s asked.
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it("retries a 500 with backoff, then succeeds", async () => {
    fake.enqueue({ kind: "error", status: 500 }, { kind: "text", text: "recovered" });
    const result = await provider().complete({ messages: [user("hi")], signal: new AbortController().signal });
    expect(result.content).toBe("recovered");
    expect(fake.requests.map((r) => r.status)).toEqual([500, 200]);
    // The client's default backoff starts at 0.5 s, less up to 25 % jitter.
    expect(fake.requests[1].receivedAt - fake.requests[0].receivedAt).toBeGreaterThanOrEqual(350);
  });

  it("surfaces a retryable ProviderError once the retries are spent", async () => {
    fake.setDefault({ kind: "error", status: 503, headers: { "retry-after-ms": "10" } });
    const err = await rejectionOf(provider({ maxRetries: 2 }).complete({ messages: [user("hi")], signal: new AbortController().signal }));
    expect(err).toBeInstanceOf(ProviderError);
    expect(err).toMatchObject({ status: 503, retryable: true, type: "server_error" });
    expect(fake.requests).toHaveLength(3);
  });

  it("fails at once, retryable, when Retry-After is longer than it will wait", async () => {
    fake.enqueue({ kind: "error", status: 429, retryAfter: 120 }, { kind: "text", text: "never reached" });
    const started = Date.now();
    const err = await rejectionOf(
      provider({ maxRetryAfterMs: 5_000 }).complete({ messages: [user("hi")], signal: new AbortController().signal }),
    );
    // Failed before the longest wait it would take (5 s): not a capped wait that then gave up.
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(err).toMatchObject({ name: "ProviderError", status: 429, retryable: true, retryAfterMs: 120_000, code: "rate_limit_exceeded" });
    expect(fake.requests).toHaveLength(1);
  });

  it("rejects a bad API key with a ProviderError 401 and does not retry", async () => {
    const err = await rejectionOf(
      provider({ apiKey: "sk-wrong" }).complete({ messages: [user("hi")], signal: new AbortController().signal, onDelta: () => {} }),
    );
    expect(err).toBeInstanceOf(ProviderError);
    expect(err).toMatchObject({ status: 401, retryable: false, code: "invalid_api_key" });
    expect(isAbortError(err)).toBe(false);
    expect(fake.requests).toHaveLength(1);
  });

  it("stops a streaming call promptly on abort, and the server sees the connection close", async () => {
    // The next chunk is 2 s away when the abort comes: the call stops before it is due.
    fake.setDefault({ kind: "slow", chunks: 100, chunkDelayMs: 2_000 });
    const controller = new AbortController();
    const deltas: string[] = [];
    let abortedAt = 0;
    const call = provider().complete({
      messages: [user("count slowly")],
      signal: controller.signal,
      onDelta: (text) => {
        deltas.push(text);
        if (deltas.length === 2) {
          abortedAt = performance.now();
          controller.abort();
        }
      },
    });
    const err = await rejectionOf(call);
    const stoppedWithin = performance.now() - abortedAt;
    expect(isAbortError(err)).toBe(true);
    expect(err).not.toBeInstanceOf(ProviderError);
    expect(stoppedWithin).toBeLessThan(2_000); // the deltas below pin the exact stop
    expect(deltas).toEqual(["Echo: count slowly", " 2"]);
    await fake.waitFor(() => fake.stats.abortedStreams === 1, 2_000, "the stream to be closed by the client");
    expect(fake.requests[0].aborted).toBe(true);
  });

  it("stops a hung stream on abort", async () => {
    fake.enqueue({ kind: "stall", chunks: ["partial"] });
    const controller = new AbortController();
    const call = provider().complete({
      messages: [user("hang")],
      signal: controller.signal,
      onDelta: () => setTimeout(() => controller.abort(), 20),
    });
    // The server sends nothing more: only the abort can end the call (the idle limit, 120 s by
    // default, would end it with a ProviderError).
    const err = await rejectionOf(call);
    expect(controller.signal.aborted).toBe(true);
    expect(isAbortError(err)).toBe(true);
    await fake.waitFor(() => fake.stats.abortedStreams === 1, 2_000, "the hung stream to be closed");
  });

  it("stops while the client sleeps before a retry, and sends no further request", async () => {
    fake.enqueue({ kind: "error", status: 429, retryAfter: 1 }, { kind: "text", text: "too late" });
    const controller = new AbortController();
    // The client's sleep before its retry is the one timer of the Retry-After's 1 s: seen when it
    // starts, and marked when it runs out.
    const realSetTimeout = globalThis.setTimeout;
    let sleeping = false;
    let sleptOut = false;
    const timers = vi.spyOn(globalThis, "setTimeout").mockImplementation(((callback: () => void, ms?: number) => {
      if (ms !== 1_000) return realSetTimeout(callback, ms);
      sleeping = true;
      return realSetTimeout(() => {
        sleptOut = true;
        callback();
      }, ms);
    }) as typeof setTimeout);
    let err: unknown;
    try {
      const call = provider().complete({ messages: [user("hi")], signal: controller.signal });
      while (!sleeping) await new Promise((done) => setImmediate(done));
      controller.abort();
      err = await rejectionOf(call);
      // Ended by the abort while the sleep was still on.
      expect(sleptOut).toBe(false);
    } finally {
      timers.mockRestore();
    }
    expect(fake.requests.map((r) => r.status)).toEqual([429]);
    expect(isAbortError(err)).toBe(true);
    // Past the Retry-After the client would have retried: it must not.
    await new Promise((done) => setTimeout(done, 1_000));
    expect(fake.requests).toHaveLength(1);
  });

  it("rejects at once when the signal is already aborted, without a request", async () => {
    const controller = new AbortController();
    controller.abort();
    const err = await rejectionOf(provider().complete({ messages: [user("hi")], signal: controller.signal }));
    expect(isAbortError(err)).toBe(true);
    expect(fake.requests).toHaveLength(0);
  });

  it("fails a stream that goes silent for longer than timeoutMs", async () => {
    fake.enqueue({ kind: "stall" });
    const started = performance.now();
    // The limit also bounds the wait for the answer's headers, and the client retries a request
    // that met it: long enough that a busy machine's headers come in time, and no retry, which
    // would get the fake's default answer instead of the silent stream.
    const err = await rejectionOf(
      provider({ timeoutMs: 1_000, maxRetries: 0 }).complete({ messages: [user("hi")], signal: new AbortController().signal, onDelta: () => {} }),
    );
    expect(err).toMatchObject({ name: "ProviderError", code: "stream_idle_timeout", retryable: true });
    expect(performance.now() - started).toBeGreaterThanOrEqual(990);
    await fake.waitFor(() => fake.stats.abortedStreams === 1, 2_000, "the silent stream to be closed");
  });

  it("maps a 400 from the server to a non-retryable ProviderError", async () => {
    const err = await rejectionOf(
      provider().complete({
        // A tool result that answers no call: the API refuses it.
        messages: [user("hi"), { role: "tool", tool_call_id: "nope", content: "x" }],
        signal: new AbortController().signal,
      }),
    );
    expect(err).toMatchObject({ name: "ProviderError", status: 400, retryable: false });
    expect((err as Error).message).toMatch(/must be a response to a preceeding message with 'tool_calls'/);
    expect(fake.requests).toHaveLength(1);
  });

  it("rethrows an error from onDelta as is", async () => {
    fake.enqueue({ kind: "text", text: "one two three" });
    const boom = new Error("subscriber failed");
    const err = await rejectionOf(
      provider().complete({
        messages: [user("hi")],
        signal: new AbortController().signal,
        onDelta: () => {
          throw boom;
        },
      }),
    );
    expect(err).toBe(boom);
  });
});
