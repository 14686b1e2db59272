// WebSocket clients end to end, with the turn run by a worker in ANOTHER OS process: the gateway
// here serves HTTP + WebSocket only, `switchboard worker` runs the turns, and events travel
// through Redis. The model is a local fake OpenAI server (slow, streamed answers).
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { comparePositions, parseStreamId } from "../../src/bus/event-bus.js";
import type { GatewayEvent } from "../../src/gateway/types.js";
import { startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai.js";
import { startTestGateway, type TestGateway } from "./support/gateway.js";
import { spawnWorker, type WorkerProcess } from "./support/worker-process.js";
import { WsTestClient, type ServerFrame } from "./support/ws-client.js";

const API_KEY = "sb-ws-key";
let fake: FakeOpenAI;
let gw: TestGateway;
let worker: WorkerProcess | null = null;
let wsUrl: string;
const clients: WsTestClient[] = [];

beforeAll(async () => {
  fake = await startFakeOpenAI({ apiKey: "model-key" });
  const llm = { LLM_BASE_URL: fake.url, LLM_API_KEY: "model-key", LLM_MODEL: "fake-model" };
  gw = await startTestGateway({ label: "ws-e2e", workers: false, env: { SWITCHBOARD_API_KEY: API_KEY, ...llm } });
  wsUrl = `${gw.url.replace(/^http/, "ws")}/ws`;
  worker = await spawnWorker({ ...gw.workerEnv, SWITCHBOARD_DATA_DIR: join(gw.dir, "worker-data") });
}, 60_000);

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await worker?.stop();
  await gw?.stop();
  await fake?.close();
});

beforeEach(() => {
  fake.setDefault({ kind: "slow", chunks: 6, chunkDelayMs: 20 });
});

async function connect(): Promise<WsTestClient> {
  const client = await WsTestClient.connect(wsUrl, API_KEY);
  clients.push(client);
  return client;
}

const newSession = (): string => `ws-${randomUUID().slice(0, 8)}`;
const isEnd = (f: ServerFrame): boolean => f.type === "event" && /^turn\.(completed|failed|interrupted)$/.test(f.kind ?? "");

function expectIncreasingIds(events: Array<{ id?: string }>): void {
  const positions = events.map((e) => parseStreamId(e.id ?? ""));
  for (const p of positions) expect(p).not.toBeNull();
  for (let i = 1; i < positions.length; i++) expect(comparePositions(positions[i]!, positions[i - 1]!)).toBeGreaterThan(0);
}

async function storedEvents(sessionId: string, afterId = "0-0"): Promise<GatewayEvent[]> {
  const all: GatewayEvent[] = [];
  for await (const page of gw.gateway.events.replay(sessionId, parseStreamId(afterId)!)) all.push(...page);
  return all;
}

describe("WebSocket clients with a worker in another process", () => {
  it("sees a turn's events in order: message.queued, turn.started, deltas, turn.completed", async () => {
    const ws = await connect();
    const session = newSession();
    await ws.subscribe(session);
    ws.send({ type: "send", session_id: session, text: "hello from a socket", client_message_id: "c-1" });
    const ack = await ws.waitFor((f) => f.type === "ack", 5000, "ack");
    expect(ack).toMatchObject({ client_message_id: "c-1", status: "accepted", session_id: session });
    const end = await ws.waitFor(isEnd, 15_000, "the end of the turn");
    expect(end.kind).toBe("turn.completed");

    const events = ws.events(session);
    expectIncreasingIds(events);
    const main = events.filter((e) => ["message.queued", "turn.started", "delta", "turn.completed"].includes(e.kind ?? ""));
    const kinds = main.map((e) => e.kind);
    expect(kinds[0]).toBe("message.queued");
    expect(kinds[1]).toBe("turn.started");
    expect(kinds.at(-1)).toBe("turn.completed");
    expect(kinds.slice(2, -1).every((k) => k === "delta")).toBe(true);
    expect(kinds.length).toBeGreaterThanOrEqual(2 + 6 + 1);
    const inboxId = main[0].data?.inbox_id;
    expect(main[1].data?.inbox_ids).toEqual([inboxId]);
    const streamed = main.filter((e) => e.kind === "delta").map((e) => String(e.data?.text)).join("");
    expect(streamed).toBe("Echo: hello from a socket 2 3 4 5 6");
    expect(end.data?.final_response).toBe(streamed);
    // The worker in the other process stored the turn in the shared database.
    const messages = await gw.gateway.store.getMessages(session);
    expect(messages.map((m) => [m.role, m.content])).toEqual([
      ["user", "hello from a socket"],
      ["assistant", streamed],
    ]);
  });

  it("stops a slow turn on an interrupt frame: turn.interrupted within about a second", async () => {
    fake.setDefault({ kind: "slow", chunks: 300, chunkDelayMs: 50 }); // 15 s if nobody stops it
    const abortedBefore = fake.stats.abortedStreams;
    const ws = await connect();
    const session = newSession();
    await ws.subscribe(session);
    ws.send({ type: "send", session_id: session, text: "a very long answer please", client_message_id: "long-1" });
    await ws.waitFor((f) => f.type === "event" && f.kind === "delta" && f.data?.text === " 3", 15_000, "the third delta");
    const sentAt = Date.now();
    ws.send({ type: "interrupt", session_id: session });
    const end = await ws.waitFor(isEnd, 5000, "the end of the interrupted turn");
    const elapsed = Date.now() - sentAt;
    expect(end.kind).toBe("turn.interrupted");
    expect(elapsed).toBeLessThan(1500);
    // The model call itself was stopped, not left running in the worker.
    await fake.waitFor(() => fake.stats.abortedStreams > abortedBefore, 3000, "the model stream to be aborted");
    expect(ws.events(session).some((e) => e.kind === "turn.completed")).toBe(false);
  });

  it("replays exactly the missed events to a client that reconnects with since", async () => {
    fake.setDefault({ kind: "slow", chunks: 12, chunkDelayMs: 40 });
    const session = newSession();
    const first = await connect();
    await first.subscribe(session);
    first.send({ type: "send", session_id: session, text: "first message", client_message_id: "m-1" });
    // Leave in the middle of the first turn.
    await first.waitFor((f) => f.type === "event" && f.kind === "delta" && f.data?.text === " 3", 15_000, "a delta mid-turn");
    await first.close();
    const seen = first.events(session);
    const lastSeen = seen.at(-1)!.id!;

    // While nobody listens: the first turn ends, and a second message (over HTTP) runs a whole turn.
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${API_KEY}`, "content-type": "application/json", "x-session-id": session },
      body: JSON.stringify({ model: "fake-model", messages: [{ role: "user", content: "second message" }] }),
    });
    expect(res.status).toBe(200);

    const missed = await storedEvents(session, lastSeen);
    expect(missed.filter((e) => e.kind === "turn.completed")).toHaveLength(2);

    const second = await connect();
    await second.subscribe(session, lastSeen);
    // Wait for the last missed event, then a moment for anything that should not come.
    await second.waitFor((f) => f.type === "event" && f.id === missed.at(-1)!.id, 5000, "the last missed event");
    await new Promise((r) => setTimeout(r, 300));
    const replayed = second.events(session);
    expectIncreasingIds([...seen, ...replayed]);
    // Deltas may be left out of a replay; everything else must come, once, in order.
    const withoutDeltas = (events: Array<{ id?: string; kind?: string }>) => events.filter((e) => e.kind !== "delta").map((e) => `${e.id} ${e.kind}`);
    expect(withoutDeltas(replayed)).toEqual(withoutDeltas(missed));
    const missedIds = new Set(missed.map((e) => e.id));
    expect(replayed.every((e) => missedIds.has(e.id!))).toBe(true);
  });
});
