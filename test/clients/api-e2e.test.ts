// The OpenAI-compatible API end to end: the official `openai` client against a real gateway
// (HTTP + workers in this process, real Redis and SQLite) whose model is a local fake OpenAI
// server that records what the model was sent.
import { randomUUID } from "node:crypto";
import OpenAI from "openai";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI, type RecordedRequest } from "../support/fake-openai.js";
import { startTestGateway, type TestGateway } from "./support/gateway.js";

const API_KEY = "sb-test-key";
let fake: FakeOpenAI;
let gw: TestGateway;
let client: OpenAI;

beforeAll(async () => {
  fake = await startFakeOpenAI({ apiKey: "model-key" });
  gw = await startTestGateway({
    label: "api-e2e",
    workers: true,
    env: { SWITCHBOARD_API_KEY: API_KEY, LLM_BASE_URL: fake.url, LLM_API_KEY: "model-key", LLM_MODEL: "fake-model", BODY_LIMIT_BYTES: "65536" },
  });
  client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: API_KEY, maxRetries: 0, timeout: 20_000 });
});

afterAll(async () => {
  await gw?.stop();
  await fake?.close();
});

beforeEach(() => {
  fake.setDefault({ kind: "echo" });
});

/** A marker unique to one test, so its model requests can be told apart. */
const marker = (): string => `m${randomUUID().slice(0, 8)}`;

function userTextsOf(request: RecordedRequest): string[] {
  const body = request.body as { messages: Array<{ role: string; content: unknown }> };
  return body.messages.filter((m) => m.role === "user").map((m) => String(m.content));
}

/** The non-system messages the model was sent, as "role: content". */
function conversationOf(request: RecordedRequest): string[] {
  const body = request.body as { messages: Array<{ role: string; content: unknown }> };
  return body.messages.filter((m) => m.role !== "system").map((m) => `${m.role}: ${String(m.content)}`);
}

function modelRequestsWith(text: string): RecordedRequest[] {
  return fake.completionRequests().filter((r) => userTextsOf(r).some((t) => t.includes(text)));
}

async function transcript(sessionId: string): Promise<string[]> {
  const rows = await gw.gateway.store.getMessages(sessionId);
  return rows.filter((m) => m.role === "user" || m.role === "assistant").map((m) => `${m.role}: ${m.content ?? ""}`);
}

async function inboxTotal(): Promise<number> {
  const counts = await gw.gateway.store.inboxCounts();
  return Object.values(counts).reduce((a, b) => a + b, 0);
}

async function rawPost(body: string, headers: Record<string, string>): Promise<{ status: number; json: { error?: { code?: string; message?: string; type?: string } } }> {
  const res = await fetch(`${gw.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body });
  return { status: res.status, json: (await res.json()) as { error?: { code?: string; message?: string } } };
}

describe("chat completions through the gateway", () => {
  it("answers a plain completion with the model's reply", async () => {
    const text = `hello ${marker()}`;
    const { data, response } = await client.chat.completions.create({ model: "fake-model", messages: [{ role: "user", content: text }] }).withResponse();
    expect(data.choices[0].message.content).toBe(`Echo: ${text}`);
    expect(data.model).toBe("fake-model");
    expect(data.id).toMatch(/^chatcmpl-\d+$/);
    const sessionId = response.headers.get("x-session-id") ?? "";
    expect(sessionId).toMatch(/^api-/);
    expect(await transcript(sessionId)).toEqual([`user: ${text}`, `assistant: Echo: ${text}`]);
  });

  it("streams deltas that concatenate to the stored reply", async () => {
    // A word every 40 ms: longer than the delta frame interval, so the words come as several chunks.
    fake.setDefault({ kind: "slow", chunks: 8, chunkDelayMs: 40 });
    const text = `tell me a long story ${marker()}`;
    const stream = await client.chat.completions.create({ model: "fake-model", stream: true, messages: [{ role: "user", content: text }] });
    const pieces: string[] = [];
    let finish: string | null = null;
    for await (const chunk of stream) {
      const choice = chunk.choices[0];
      if (choice?.delta.content) pieces.push(choice.delta.content);
      if (choice?.finish_reason) finish = choice.finish_reason;
    }
    expect(pieces.join("")).toBe(`Echo: ${text} 2 3 4 5 6 7 8`);
    expect(pieces.length).toBeGreaterThan(3); // streamed, not one block
    expect(finish).toBe("stop");
  });

  it("finishes and stores the turn of a streaming client that went away mid-stream", async () => {
    fake.setDefault({ kind: "slow", chunks: 10, chunkDelayMs: 50 });
    const sessionId = `gone-${marker()}`;
    const controller = new AbortController();
    const stream = await client.chat.completions.create(
      { model: "fake-model", stream: true, messages: [{ role: "user", content: "walk away" }] },
      { headers: { "X-Session-Id": sessionId }, signal: controller.signal },
    );
    for await (const chunk of stream) if (chunk.choices[0]?.delta.content === " 2") break; // leaving the loop aborts
    const full = "Echo: walk away 2 3 4 5 6 7 8 9 10";
    const deadline = Date.now() + 8000;
    while ((await transcript(sessionId)).length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(await transcript(sessionId)).toEqual(["user: walk away", `assistant: ${full}`]);
  });

  it("answers a slash command without a model call", async () => {
    const before = fake.completionRequests().length;
    const reply = await client.chat.completions.create({ model: "fake-model", messages: [{ role: "user", content: "/help" }] });
    expect(reply.choices[0].message.content).toContain("/status");
    const stream = await client.chat.completions.create({ model: "fake-model", stream: true, messages: [{ role: "user", content: "/help" }] });
    let streamed = "";
    for await (const chunk of stream) streamed += chunk.choices[0]?.delta.content ?? "";
    expect(streamed).toBe(reply.choices[0].message.content);
    expect(fake.completionRequests().length).toBe(before);
  });

  it("continues an X-Session-Id session over three requests: the model sees the earlier turns, the transcript has each message once", async () => {
    const sessionId = `conv-${marker()}`;
    const options = { headers: { "X-Session-Id": sessionId } };
    const first = await client.chat.completions.create({ model: "fake-model", messages: [{ role: "user", content: "alpha one" }] }, options);
    expect(first.choices[0].message.content).toBe("Echo: alpha one");
    // The second request carries the whole history, the third only the new message: both work.
    await client.chat.completions.create(
      {
        model: "fake-model",
        messages: [
          { role: "user", content: "alpha one" },
          { role: "assistant", content: "Echo: alpha one" },
          { role: "user", content: "beta two" },
        ],
      },
      options,
    );
    const third = await client.chat.completions.create({ model: "fake-model", messages: [{ role: "user", content: "gamma three" }] }, options);
    expect(third.choices[0].message.content).toBe("Echo: gamma three");

    const lastModelRequest = fake.completionRequests().at(-1)!;
    expect(conversationOf(lastModelRequest)).toEqual([
      "user: alpha one",
      "assistant: Echo: alpha one",
      "user: beta two",
      "assistant: Echo: beta two",
      "user: gamma three",
    ]);
    expect(await transcript(sessionId)).toEqual([
      "user: alpha one",
      "assistant: Echo: alpha one",
      "user: beta two",
      "assistant: Echo: beta two",
      "user: gamma three",
      "assistant: Echo: gamma three",
    ]);
  });

  it("seeds a fresh session from the request's earlier messages", async () => {
    const m = marker();
    const { response } = await client.chat.completions
      .create({
        model: "fake-model",
        messages: [
          { role: "user", content: `my name is ${m}` },
          { role: "assistant", content: "Nice to meet you." },
          { role: "user", content: "what is my name?" },
        ],
      })
      .withResponse();
    const request = modelRequestsWith(`my name is ${m}`).at(-1)!;
    expect(conversationOf(request)).toEqual([`user: my name is ${m}`, "assistant: Nice to meet you.", "user: what is my name?"]);
    expect(await transcript(response.headers.get("x-session-id") ?? "")).toEqual([
      `user: my name is ${m}`,
      "assistant: Nice to meet you.",
      "user: what is my name?",
      "assistant: Echo: what is my name?",
    ]);
  });

  it("runs two concurrent first requests on a new X-Session-Id one after the other; the second sees the first", async () => {
    fake.setDefault({ kind: "echo", chunkDelayMs: 60 });
    const sessionId = `race-${marker()}`;
    const options = { headers: { "X-Session-Id": sessionId } };
    const texts = ["first racer says hi", "second racer says hello"];
    const replies = await Promise.all(texts.map((content) => client.chat.completions.create({ model: "fake-model", messages: [{ role: "user", content }] }, options)));
    expect(replies.map((r) => r.choices[0].message.content).sort()).toEqual(texts.map((t) => `Echo: ${t}`).sort());

    const requests = fake.completionRequests().filter((r) => texts.some((t) => userTextsOf(r).includes(t)));
    expect(requests).toHaveLength(2);
    const [earlier, later] = requests;
    const firstText = userTextsOf(earlier).at(-1)!;
    const secondText = texts.find((t) => t !== firstText)!;
    expect(conversationOf(later)).toEqual([`user: ${firstText}`, `assistant: Echo: ${firstText}`, `user: ${secondText}`]);
    expect(await transcript(sessionId)).toEqual([`user: ${firstText}`, `assistant: Echo: ${firstText}`, `user: ${secondText}`, `assistant: Echo: ${secondText}`]);
  });

  it("answers a retried request with the same Idempotency-Key with the same answer: one turn, one inbox row", async () => {
    fake.setDefault({ kind: "echo", chunkDelayMs: 50 });
    const text = `pay invoice ${marker()}`;
    const options = { headers: { "Idempotency-Key": `idem-${randomUUID()}` } };
    const body = { model: "fake-model", messages: [{ role: "user" as const, content: text }] };
    const before = await inboxTotal();
    // The retry arrives while the first request is still running, then once more after it finished.
    const [first, concurrent] = await Promise.all([
      client.chat.completions.create(body, options).withResponse(),
      new Promise((r) => setTimeout(r, 30)).then(() => client.chat.completions.create(body, options).withResponse()),
    ]);
    const late = await client.chat.completions.create(body, options).withResponse();
    for (const retry of [concurrent, late]) {
      expect(retry.data).toEqual(first.data);
      expect(retry.response.headers.get("x-session-id")).toBe(first.response.headers.get("x-session-id"));
    }
    expect(first.data.choices[0].message.content).toBe(`Echo: ${text}`);
    expect(modelRequestsWith(text)).toHaveLength(1);
    expect(await inboxTotal()).toBe(before + 1);
    expect(await transcript(first.response.headers.get("x-session-id") ?? "")).toEqual([`user: ${text}`, `assistant: Echo: ${text}`]);
  });

  it("answers 502 turn_failed when the model fails", async () => {
    fake.enqueue({ kind: "error", status: 400, message: "The model rejected the request." });
    const error = await client.chat.completions.create({ model: "fake-model", messages: [{ role: "user", content: "fail please" }] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(error).toMatchObject({ status: 502, code: "turn_failed" });
  });

  it("answers 504 when the reply is late, and the message is still answered and stored", async () => {
    const saved = gw.gateway.config.turnReplyTimeoutMs;
    gw.gateway.config.turnReplyTimeoutMs = 1000;
    try {
      fake.enqueue({ kind: "echo", delayMs: 5000 });
      const sessionId = `late-${marker()}`;
      const error = await client.chat.completions
        .create({ model: "fake-model", messages: [{ role: "user", content: "slow answer" }] }, { headers: { "X-Session-Id": sessionId } })
        .catch((e: unknown) => e);
      expect(error).toMatchObject({ status: 504, code: "turn_timeout" });
      // Answered at the reply timeout, while the model (5 s) had not answered yet.
      expect((await transcript(sessionId)).filter((line) => line.startsWith("assistant:"))).toEqual([]);
      const deadline = Date.now() + 15_000;
      while ((await transcript(sessionId)).length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      expect(await transcript(sessionId)).toEqual(["user: slow answer", "assistant: Echo: slow answer"]);
    } finally {
      gw.gateway.config.turnReplyTimeoutMs = saved;
    }
  });
});

describe("request checks", () => {
  const auth = { authorization: `Bearer ${API_KEY}` };
  const valid = JSON.stringify({ model: "fake-model", messages: [{ role: "user", content: "hi" }] });

  it("refuses 401 without a key and with a wrong key", async () => {
    const missing = await rawPost(valid, {});
    expect(missing.status).toBe(401);
    expect(missing.json.error).toMatchObject({ type: "authentication_error", code: "missing_api_key" });
    const wrong = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: "not-the-key", maxRetries: 0 });
    await expect(wrong.chat.completions.create({ model: "fake-model", messages: [{ role: "user", content: "hi" }] })).rejects.toMatchObject({
      status: 401,
      code: "invalid_api_key",
    });
    await expect(wrong.models.list()).rejects.toMatchObject({ status: 401 });
  });

  it("answers 400 naming the bad field", async () => {
    const bad = await rawPost(JSON.stringify({ model: "fake-model", messages: [{ role: "user", content: 42 }] }), auth);
    expect(bad.status).toBe(400);
    expect(bad.json.error?.message).toContain("messages[0].content");
    const noMessages = await rawPost(JSON.stringify({ model: "fake-model" }), auth);
    expect(noMessages.status).toBe(400);
    expect(noMessages.json.error?.message).toContain("messages");
  });

  it("answers 413 for a body over the limit", async () => {
    const huge = JSON.stringify({ model: "fake-model", messages: [{ role: "user", content: "x".repeat(200_000) }] });
    const res = await rawPost(huge, auth);
    expect(res.status).toBe(413);
    expect(res.json.error?.code).toBe("body_too_large");
  });

  it("lists the configured model", async () => {
    const models = await client.models.list();
    expect(models.data.map((m) => [m.id, m.owned_by])).toEqual([["fake-model", "switchboard"]]);
  });
});
