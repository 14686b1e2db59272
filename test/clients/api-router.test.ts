// Request-level tests of the OpenAI-compatible router, mounted in the gateway's express app, with
// a scripted ingress that plays turns on a real event bus (real Redis).
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import OpenAI from "openai";
import { pino } from "pino";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createApiServerRouter } from "../../src/clients/openai/index.js";
import { DEFAULT_MEDIA_SETTINGS } from "../../src/gateway/media.js";
import { wordChunks } from "../../src/agent/providers/echo.js";
import { buildApp } from "../../src/main/app.js";
import type { EventKind, EventSubscriber } from "../../src/bus/types.js";
import { EventBus } from "../../src/bus/event-bus.js";
import { deletePrefix, newRedisClient, uniquePrefix } from "../support/redis.js";
import { ScriptedIngress, type ScriptedTurn, type TurnContext } from "./support/scripted-ingress.js";

const redis = newRedisClient();
const prefix = uniquePrefix("api-router");
// Streamed text is coalesced per interval; the scripted turns stream a word per WORD_GAP_MS, so
// that each word is a frame of its own and the tests can see word-by-word streaming.
const bus = new EventBus({ redis, prefix, deltaIntervalMs: 10 });
const WORD_GAP_MS = 25;

const echoTurn: ScriptedTurn = async (turn) => {
  const text = `Echo: ${turn.message.text}`;
  await turn.publish("turn.started");
  let offset = 0;
  for (const piece of wordChunks(text)) {
    await turn.publish("delta", { text: piece, offset });
    offset += piece.length;
    await new Promise((resolve) => setTimeout(resolve, WORD_GAP_MS));
  }
  await turn.publish("turn.completed", { final_response: text });
  turn.finish("done", text);
};

let server: Server;
let baseUrl: string;
let ingress: ScriptedIngress;
let activeSubscriptions = 0;
const config = { bodyLimitBytes: 4096, turnReplyTimeoutMs: 700, llm: { baseUrl: null, apiKey: null, model: "test-model" }, media: DEFAULT_MEDIA_SETTINGS };

// Counts the router's live subscriptions, to see that a request leaves none behind.
const events: EventSubscriber = {
  async subscribe(sessionId, listener, options) {
    const off = await bus.subscribe(sessionId, listener, options);
    activeSubscriptions++;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      activeSubscriptions--;
      off();
    };
  },
};

beforeAll(async () => {
  ingress = new ScriptedIngress(bus, echoTurn);
  const app = buildApp({
    logger: pino({ level: "silent" }),
    apiKey: null,
    operationalRoutes: [],
    publicRoutes: [],
    protectedRoutes: [
      createApiServerRouter({
        // Each test gets a fresh scripted ingress; the router reaches it through these.
        ingress: {
          accept: (m) => ingress.accept(m),
          waitForOutcome: (id, ms) => ingress.waitForOutcome(id, ms),
          interrupt: async () => undefined,
          recordRejected: (m, reason) => ingress.recordRejected(m, reason),
          recordDeliveryReceipt: async () => false,
        },
        store: {
          conversationIdOf: (id) => ingress.storeView().conversationIdOf(id),
          getInboxRow: (id) => ingress.storeView().getInboxRow(id),
          findInboxRow: (platform, messageId) => ingress.storeView().findInboxRow(platform, messageId),
        },
        events,
        config,
        logger: pino({ level: "silent" }),
      }),
    ],
  });
  server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

beforeEach(() => {
  ingress = new ScriptedIngress(bus, echoTurn);
});

afterEach(async () => {
  // Every request, finished or abandoned, must let go of its subscription.
  const deadline = Date.now() + 2000;
  while (activeSubscriptions > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  expect(activeSubscriptions).toBe(0);
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await bus.close();
  await deletePrefix(redis, prefix);
  redis.disconnect();
});

function client(headers: Record<string, string> = {}): OpenAI {
  return new OpenAI({ baseURL: `${baseUrl}/v1`, apiKey: "unused", maxRetries: 0, defaultHeaders: headers });
}

async function post(body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; headers: Headers; json: Record<string, unknown>; text: string }> {
  const res = await fetch(`${baseUrl}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // SSE or empty
  }
  return { status: res.status, headers: res.headers, json, text };
}

const hello = { model: "test-model", messages: [{ role: "user", content: "hello there" }] };

describe("POST /v1/chat/completions (non-streaming)", () => {
  it("answers with a chat.completion and a fresh api-<uuid> session seeded from the earlier messages", async () => {
    const { data, response } = await client()
      .chat.completions.create({
        model: "anything",
        messages: [
          { role: "system", content: "be nice" },
          { role: "user", content: "earlier" },
          { role: "assistant", content: "reply" },
          { role: "user", content: "latest words" },
        ],
        temperature: 0.3,
      })
      .withResponse();
    expect(data.object).toBe("chat.completion");
    expect(data.id).toBe("chatcmpl-1");
    expect(data.created).toBe(1_700_000_123);
    expect(data.model).toBe("test-model");
    expect(data.choices[0].message).toMatchObject({ role: "assistant", content: "Echo: latest words" });
    expect(data.choices[0].finish_reason).toBe("stop");
    const sessionId = response.headers.get("x-session-id") ?? "";
    expect(sessionId).toMatch(/^api-[0-9a-f-]{36}$/);
    const [inbound] = ingress.accepted;
    expect(inbound).toMatchObject({
      platform: "api",
      sessionId,
      sessionKey: `api:${sessionId}`,
      text: "latest words",
      replyTarget: null,
      seedHistory: [
        { role: "system", content: "be nice" },
        { role: "user", content: "earlier" },
        { role: "assistant", content: "reply" },
      ],
    });
    expect(inbound.platformMessageId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("addresses the X-Session-Id session and does not store the request's earlier messages again", async () => {
    const res = await post(
      { model: "m", messages: [{ role: "user", content: "old" }, { role: "assistant", content: "old reply" }, { role: "user", content: "new" }] },
      { "X-Session-Id": "client:chat-7" },
    );
    expect(res.status).toBe(200);
    expect(res.headers.get("x-session-id")).toBe("client:chat-7");
    expect(ingress.accepted[0]).toMatchObject({ sessionId: "client:chat-7", sessionKey: "api:client:chat-7", text: "new" });
    expect(ingress.accepted[0].seedHistory).toBeUndefined();
  });

  it("answers a retry with the same Idempotency-Key with the same answer and no second turn", async () => {
    const body = { model: "m", messages: [{ role: "user", content: "seeded" }, { role: "assistant", content: "ok" }, { role: "user", content: "once" }] };
    const first = await post(body, { "Idempotency-Key": "retry-1" });
    const second = await post(body, { "Idempotency-Key": "retry-1" });
    expect(first.status).toBe(200);
    expect(second.text).toBe(first.text);
    expect(second.headers.get("x-session-id")).toBe(first.headers.get("x-session-id"));
    expect(ingress.turnsRun).toEqual([1]);
    // Scoped to the body (no session): its digest sits between the (empty) session and the key.
    const [id, retried] = ingress.accepted.map((m) => m.platformMessageId);
    expect(id).toMatch(/^idem::[\w-]{43}:retry-1$/);
    expect(retried).toBe(id);
    // The retry goes to the first request's session and seeds nothing new.
    expect(ingress.accepted[1].sessionId).toBe(first.headers.get("x-session-id"));
    expect(ingress.accepted[1].seedHistory).toBeUndefined();
  });

  it("scopes an Idempotency-Key to the addressed session: the same key in two sessions makes two turns", async () => {
    const body = { model: "m", messages: [{ role: "user", content: "hello" }] };
    const a = await post(body, { "Idempotency-Key": "1", "X-Session-Id": "scope-a" });
    const b = await post(body, { "Idempotency-Key": "1", "X-Session-Id": "scope-b" });
    const again = await post(body, { "Idempotency-Key": "1", "X-Session-Id": "scope-a" });
    expect([a.status, b.status, again.status]).toEqual([200, 200, 200]);
    const ids = ingress.accepted.map((m) => m.platformMessageId);
    expect(ids[0]).toMatch(/^idem:scope-a:[\w-]{43}:1$/);
    expect(ids[1]).toMatch(/^idem:scope-b:[\w-]{43}:1$/);
    expect(ids[2]).toBe(ids[0]);
    expect(ingress.turnsRun).toHaveLength(2);
    expect(again.text).toBe(a.text);
  });

  it("maps a failed turn to 502 turn_failed, a timeout to 504 and a rejected message to 400", async () => {
    ingress.turn = async (turn) => {
      await turn.publish("turn.started");
      await turn.publish("turn.failed", { error: "model unreachable" });
      turn.finish("failed", "Sorry, the model is unreachable.");
    };
    const failed = await post(hello);
    expect(failed.status).toBe(502);
    expect(failed.json).toEqual({ error: { message: expect.stringContaining("model is unreachable"), type: "server_error", code: "turn_failed" } });

    ingress.turn = async () => undefined; // never answers
    const late = await post(hello, { "X-Session-Id": "slow-1" });
    expect(late.status).toBe(504);
    expect(late.json).toMatchObject({ error: { code: "turn_timeout", message: expect.stringContaining("still queued") } });
    expect(late.headers.get("x-session-id")).toBe("slow-1");

    ingress.rejectReason = "text is longer than 10 characters";
    const rejected = await post(hello);
    expect(rejected.status).toBe(400);
    expect(rejected.json).toMatchObject({ error: { code: "message_rejected", message: expect.stringContaining("longer than 10") } });
  });
});

describe("request checks", () => {
  it("rejects a bad body with 400 naming the field, before anything is accepted", async () => {
    const badRole = await post({ model: "m", messages: [{ role: "wizard", content: "x" }] });
    expect(badRole.status).toBe(400);
    expect(badRole.json).toMatchObject({ error: { type: "invalid_request_error", code: "invalid_body", message: expect.stringContaining("messages[0].role") } });
    const noModel = await post({ messages: [{ role: "user", content: "x" }] });
    expect(noModel.status).toBe(400);
    expect((noModel.json.error as { message: string }).message).toContain("model");
    const notJson = await post("{nope");
    expect(notJson.status).toBe(400);
    expect(notJson.json).toMatchObject({ error: { code: "malformed_json" } });
    const noType = await fetch(`${baseUrl}/v1/chat/completions`, { method: "POST", body: JSON.stringify(hello) });
    expect(noType.status).toBe(400);
    expect(ingress.accepted).toEqual([]);
  });

  it("rejects a malformed X-Session-Id or Idempotency-Key with 400", async () => {
    const badSession = await post(hello, { "X-Session-Id": "has/slash" });
    expect(badSession.status).toBe(400);
    expect(badSession.json).toMatchObject({ error: { code: "invalid_session_id" } });
    const longSession = await post(hello, { "X-Session-Id": "x".repeat(129) });
    expect(longSession.status).toBe(400);
    const badKey = await post(hello, { "Idempotency-Key": "k".repeat(300) });
    expect(badKey.status).toBe(400);
    expect(badKey.json).toMatchObject({ error: { code: "invalid_idempotency_key" } });
    expect(ingress.accepted).toEqual([]);
  });

  it("answers 413 for a body over the configured limit", async () => {
    const huge = await post({ model: "m", messages: [{ role: "user", content: "x".repeat(10_000) }] });
    expect(huge.status).toBe(413);
    expect(huge.json).toMatchObject({ error: { type: "request_too_large", code: "body_too_large" } });
    expect(ingress.accepted).toEqual([]);
  });
});

describe("GET /v1/models", () => {
  it("lists the configured model, and retrieves it by id", async () => {
    const page = await client().models.list();
    expect(page.data).toEqual([{ id: "test-model", object: "model", created: expect.any(Number), owned_by: "switchboard" }]);
    expect((await client().models.retrieve("test-model")).id).toBe("test-model");
    await expect(client().models.retrieve("other")).rejects.toMatchObject({ status: 404 });
  });
});

describe("POST /v1/chat/completions (streaming)", () => {
  async function collect(stream: AsyncIterable<OpenAI.Chat.Completions.ChatCompletionChunk>): Promise<{ content: string; chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] }> {
    const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    return { content: chunks.map((c) => c.choices[0]?.delta.content ?? "").join(""), chunks };
  }

  it("streams the turn's deltas as chunks: role first, finish_reason stop last, then [DONE]", async () => {
    const stream = await client().chat.completions.create({ model: "m", stream: true, messages: [{ role: "user", content: "stream me please" }] });
    const { content, chunks } = await collect(stream);
    expect(content).toBe("Echo: stream me please");
    expect(chunks[0].choices[0].delta.role).toBe("assistant");
    expect(chunks.every((c) => c.object === "chat.completion.chunk" && c.id === "chatcmpl-1")).toBe(true);
    // One chunk per delta: the role chunk, 4 words, the final chunk.
    expect(chunks).toHaveLength(6);
    expect(chunks[chunks.length - 1].choices[0].finish_reason).toBe("stop");

    const raw = await post({ ...hello, stream: true }, { "X-Session-Id": "raw-sse" });
    expect(raw.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expect(raw.headers.get("x-session-id")).toBe("raw-sse");
    expect(raw.text.trimEnd().endsWith("data: [DONE]")).toBe(true);
  });

  it("keeps events published before accept() returned, and skips other turns of the session", async () => {
    ingress.runBeforeReturn = true;
    ingress.turn = async (turn: TurnContext) => {
      const other = (kind: EventKind, data: Record<string, unknown> = {}) => bus.publish(turn.sessionId, kind, { inbox_ids: [999], ...data });
      await other("turn.started");
      await other("delta", { text: "NOT MINE ", offset: 0 });
      await new Promise((resolve) => setTimeout(resolve, WORD_GAP_MS));
      await other("turn.completed", { final_response: "NOT MINE" });
      await echoTurn(turn);
    };
    const stream = await client({ "X-Session-Id": "shared-session" }).chat.completions.create({ model: "m", stream: true, messages: [{ role: "user", content: "early bird" }] });
    const { content, chunks } = await collect(stream);
    expect(content).toBe("Echo: early bird");
    // Streamed delta by delta (not made up from final_response at the end).
    expect(chunks.map((c) => c.choices[0]?.delta.content).filter(Boolean)).toEqual(["Echo:", " early", " bird"]);
  });

  it("still streams word by word when the turn is over before its events arrive", async () => {
    // A fast turn can complete its inbox row before pub/sub delivers the first event.
    ingress.turn = async (turn) => {
      turn.finish("done", `Echo: ${turn.message.text}`);
      await new Promise((r) => setTimeout(r, 100));
      await echoTurn({ ...turn, finish: () => undefined });
    };
    const stream = await client().chat.completions.create({ model: "m", stream: true, messages: [{ role: "user", content: "quick one" }] });
    const { chunks } = await collect(stream);
    expect(chunks.map((c) => c.choices[0]?.delta.content).filter(Boolean)).toEqual(["Echo:", " quick", " one"]);
  });

  it("answers a command (no turn, a `command` event) without waiting", async () => {
    // The row and the event say it differently here, so the answer shows which one gave it: a
    // stream that did not take the `command` event as the end would wait out the grace for late
    // events and answer from the row.
    ingress.turn = async (turn) => {
      turn.finish("done", "Commands (from the row)");
      await turn.publish("command", { command: "help", reply: "Commands: ..." });
    };
    const stream = await client().chat.completions.create({ model: "m", stream: true, messages: [{ role: "user", content: "/help" }] });
    expect((await collect(stream)).content).toBe("Commands: ...");
  });

  it("sends the rest of final_response when the deltas fell short of it, and usage when asked", async () => {
    ingress.turn = async (turn) => {
      await turn.publish("turn.started");
      await turn.publish("delta", { text: "Echo:" });
      await turn.publish("turn.completed", { final_response: "Echo: the whole text" });
      turn.finish("done", "Echo: the whole text");
    };
    const stream = await client().chat.completions.create({ model: "m", stream: true, stream_options: { include_usage: true }, messages: [{ role: "user", content: "x" }] });
    const { content, chunks } = await collect(stream);
    expect(content).toBe("Echo: the whole text");
    expect(chunks[chunks.length - 1]).toMatchObject({ choices: [], usage: { total_tokens: 0 } });
  });

  it("streams a failed turn as an error the client raises, and a timeout likewise", async () => {
    ingress.turn = async (turn) => {
      await turn.publish("turn.started");
      await turn.publish("delta", { text: "partial" });
      await turn.publish("turn.failed", { error: "model unreachable" });
      turn.finish("failed", null);
    };
    const failing = await client().chat.completions.create({ model: "m", stream: true, messages: [{ role: "user", content: "x" }] });
    await expect(collect(failing)).rejects.toMatchObject({ code: "turn_failed" });

    ingress.turn = async () => undefined;
    const silent = await client().chat.completions.create({ model: "m", stream: true, messages: [{ role: "user", content: "x" }] });
    await expect(collect(silent)).rejects.toMatchObject({ code: "turn_timeout" });
  });

  it("answers a streamed retry with the whole reply of the first request", async () => {
    const headers = { "Idempotency-Key": "stream-retry" };
    const first = await collect(await client(headers).chat.completions.create({ model: "m", stream: true, messages: [{ role: "user", content: "only once" }] }));
    const again = await collect(await client(headers).chat.completions.create({ model: "m", stream: true, messages: [{ role: "user", content: "only once" }] }));
    expect(again.content).toBe(first.content);
    expect(again.chunks[0].id).toBe(first.chunks[0].id);
    expect(ingress.turnsRun).toEqual([1]);
  });

  it("lets go of the session's events when the client disconnects mid-stream", async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let finished = false;
    ingress.turn = async (turn) => {
      await turn.publish("turn.started");
      await turn.publish("delta", { text: "first words" });
      await gate;
      await turn.publish("turn.completed", { final_response: "first words" });
      turn.finish("done", "first words");
      finished = true;
    };
    const controller = new AbortController();
    const stream = await client().chat.completions.create({ model: "m", stream: true, messages: [{ role: "user", content: "x" }] }, { signal: controller.signal });
    for await (const chunk of stream) {
      if (chunk.choices[0]?.delta.content === "first words") break; // leaving the loop aborts the request
    }
    const deadline = Date.now() + 2000;
    while (activeSubscriptions > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(activeSubscriptions).toBe(0);
    release();
    await new Promise((r) => setTimeout(r, 50));
    expect(finished).toBe(true);
  });
});
