// The fake model server checks requests the way the real API does, speaks real SSE, and runs
// standalone for tests that need it in another process.
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import OpenAI from "openai";
import { OpenAIProvider } from "../../../src/agent/providers/openai.js";
import type { ModelMessage } from "../../../src/agent/types.js";
import { startFakeOpenAI, type FakeOpenAI } from "../../support/fake-openai.js";

const KEY = "sk-fake-key";

describe("fake OpenAI server", () => {
  let fake: FakeOpenAI;
  beforeEach(async () => {
    fake = await startFakeOpenAI({ apiKey: KEY });
  });
  afterEach(async () => {
    await fake.close();
  });

  const post = (body: unknown, headers: Record<string, string> = { authorization: `Bearer ${KEY}` }): Promise<Response> =>
    fetch(`${fake.url}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: typeof body === "string" ? body : JSON.stringify(body),
    });
  const valid = { model: "m", messages: [{ role: "user", content: "hi" }] };

  it("refuses a missing or wrong bearer key with OpenAI's 401 error shape", async () => {
    const attempts: Array<Record<string, string>> = [{}, { authorization: "Bearer sk-other" }, { authorization: KEY }];
    for (const headers of attempts) {
      const res = await post(valid, headers);
      expect(res.status).toBe(401);
      const body = (await res.json()) as { error: Record<string, unknown> };
      expect(body.error).toMatchObject({ type: "invalid_request_error", param: null });
      expect(typeof body.error.message).toBe("string");
      expect(JSON.stringify(body)).not.toContain(KEY);
    }
    expect(fake.completionRequests()).toHaveLength(0);
    expect(fake.requests.map((r) => r.status)).toEqual([401, 401, 401]);
  });

  it.each([
    ["not JSON", "{nope", /could not parse the JSON body/],
    ["no model", { messages: valid.messages }, /must provide a model/],
    ["no messages", { model: "m" }, /Missing required parameter: 'messages'/],
    ["empty messages", { model: "m", messages: [] }, /empty array/],
    ["a bad role", { model: "m", messages: [{ role: "robot", content: "x" }] }, /Invalid value: 'robot'/],
    ["a user message without content", { model: "m", messages: [{ role: "user" }] }, /messages\[0\]\.content/],
    ["an orphan tool result", { model: "m", messages: [{ role: "user", content: "x" }, { role: "tool", tool_call_id: "c1", content: "r" }] }, /must be a response to a preceeding message/],
    [
      "an unanswered tool call",
      {
        model: "m",
        messages: [
          { role: "user", content: "x" },
          { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: "{}" } }] },
          { role: "user", content: "y" },
        ],
      },
      /did not have response messages: c1/,
    ],
    ["a bad tool name", { ...valid, tools: [{ type: "function", function: { name: "has space" } }] }, /tools\[0\]\.function\.name/],
    ["a tool that is not a function", { ...valid, tools: [{ type: "web", function: { name: "f" } }] }, /tools\[0\]\.type/],
    ["stream_options without stream", { ...valid, stream_options: { include_usage: true } }, /only allowed when 'stream' is enabled/],
    ["an unknown parameter", { ...valid, tempreature: 1 }, /Unrecognized request argument supplied: tempreature/],
  ])("answers 400 to %s", async (_label, body, message) => {
    const res = await post(body);
    expect(res.status).toBe(400);
    const json = (await res.json()) as { error: { message: string; type: string } };
    expect(json.error.type).toBe("invalid_request_error");
    expect(json.error.message).toMatch(message);
    expect(fake.completionRequests()).toHaveLength(0);
  });

  it("lists models and answers 404 on unknown routes", async () => {
    const client = new OpenAI({ baseURL: fake.url, apiKey: KEY, maxRetries: 0 });
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toEqual(["fake-model"]);
    const res = await fetch(`${fake.url}/embeddings`, { method: "POST", headers: { authorization: `Bearer ${KEY}` } });
    expect(res.status).toBe(404);
  });

  it("streams real SSE chunks, with tool-call deltas, ending in [DONE]", async () => {
    fake.enqueue({ kind: "tool_calls", calls: [{ id: "call_1", name: "f", arguments: '{"a":1}' }], argChunkSize: 4 });
    const res = await post({ ...valid, stream: true, stream_options: { include_usage: true } });
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const events = (await res.text()).split("\n\n").filter(Boolean);
    expect(events.every((e) => e.startsWith("data: "))).toBe(true);
    expect(events.at(-1)).toBe("data: [DONE]");
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e.slice(6)) as { object: string; choices: Array<{ delta: { tool_calls?: unknown[] }; finish_reason: string | null }>; usage: unknown });
    expect(chunks.every((c) => c.object === "chat.completion.chunk")).toBe(true);
    const toolDeltas = chunks.flatMap((c) => c.choices.flatMap((ch) => ch.delta.tool_calls ?? []));
    expect(toolDeltas).toEqual([
      { index: 0, id: "call_1", type: "function", function: { name: "f", arguments: "" } },
      { index: 0, function: { arguments: '{"a"' } },
      { index: 0, function: { arguments: ":1}" } },
    ]);
    expect(chunks.at(-2)?.choices[0].finish_reason).toBe("tool_calls");
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { completion_tokens: 1 } });
    await fake.waitFor(() => fake.stats.completedStreams === 1, 2_000, "the stream to complete");
  });

  it("answers like the echo model by default, tool directives included", async () => {
    const provider = new OpenAIProvider({ baseURL: fake.url, apiKey: KEY, model: "m" });
    const messages: ModelMessage[] = [{ role: "user", content: "time? [[tool:clock]]" }];
    const tools = [{ name: "clock", description: "time", parameters: { type: "object" } }];
    const first = await provider.complete({ messages, tools, signal: new AbortController().signal, onDelta: () => {} });
    expect(first.toolCalls).toEqual([{ id: "echo_call_1_0", type: "function", function: { name: "clock", arguments: "{}" } }]);
    messages.push({ role: "assistant", content: null, tool_calls: first.toolCalls }, { role: "tool", tool_call_id: "echo_call_1_0", content: "noon" });
    const deltas: string[] = [];
    const second = await provider.complete({ messages, tools, signal: new AbortController().signal, onDelta: (t) => deltas.push(t) });
    expect(second.content).toBe("Echo: time? | clock -> noon");
    expect(deltas.join("")).toBe(second.content);
  });

  it("drops the connection when scripted to, and records the request", async () => {
    fake.enqueue({ kind: "disconnect" });
    await expect(post(valid)).rejects.toThrow();
    expect(fake.requests[0]).toMatchObject({ answeredWith: "disconnect" });
  });

  it("runs as a standalone process, printing its URL, scriptable over HTTP", async () => {
    const child = spawn(process.execPath, ["--import", "tsx", fileURLToPath(new URL("../../support/fake-openai.ts", import.meta.url)), "--port", "0", "--api-key", KEY, "--slow-chunks", "3", "--chunk-delay-ms", "10"], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    try {
      const url = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error("no URL printed within 15 s")), 15_000);
        createInterface({ input: child.stdout! }).once("line", (line) => {
          clearTimeout(timer);
          resolve(line.trim());
        });
        child.once("exit", (code) => reject(new Error(`exited early with ${code}`)));
      });
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
      const client = new OpenAI({ baseURL: url, apiKey: KEY, maxRetries: 0 });
      const slow = await client.chat.completions.create({ model: "m", messages: [{ role: "user", content: "yo" }] });
      expect(slow.choices[0].message.content).toBe("Echo: yo 2 3");

      const origin = url.replace(/\/v1$/, "");
      const auth = { authorization: `Bearer ${KEY}`, "content-type": "application/json" };
      await fetch(`${origin}/_fake/enqueue`, { method: "POST", headers: auth, body: JSON.stringify({ kind: "text", text: "scripted" }) });
      const scripted = await client.chat.completions.create({ model: "m", messages: [{ role: "user", content: "x" }] });
      expect(scripted.choices[0].message.content).toBe("scripted");
      const state = (await (await fetch(`${origin}/_fake/state`, { headers: auth })).json()) as { requests: unknown[] };
      expect(state.requests).toHaveLength(2);
    } finally {
      child.kill("SIGTERM");
      await new Promise((done) => (child.exitCode !== null ? done(null) : child.once("exit", done)));
    }
  });
});
