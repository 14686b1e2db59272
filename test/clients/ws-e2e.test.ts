// WebSocket clients end to end, with the turn run by a worker in ANOTHER OS process: the gateway
// here serves HTTP + WebSocket only, `switchboard worker` runs the turns, and events travel
// through Redis. The model is a local fake OpenAI server (slow, streamed answers).
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { comparePositions, parseStreamId } from "../../src/bus/event-bus.js";
import type { GatewayEvent } from "../../src/gateway/types.js";
import { startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai.js";
import { DELTA_FRAME_INTERVAL_MS } from "../../src/bus/delta-coalescer.js";
import { startTestGateway, type TestGateway } from "./support/gateway.js";
import { streamedReply } from "./support/streamed-reply.js";
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

/** A delta frame that streamed the word `word` (frames carry several words: they are coalesced). */
const deltaWith = (word: string) => (f: ServerFrame): boolean => f.type === "event" && f.kind === "delta" && ` ${String(f.data?.text)} `.includes(` ${word} `);

/**
 * Stored events come with increasing ids; a delta (never stored) carries the id of the stored
 * event before it, so that resuming from it with `since` is exact.
 */
function expectEventIds(events: ServerFrame[]): void {
  expectIncreasingIds(events.filter((e) => e.kind !== "delta"));
  let lastStored: string | undefined;
  for (const event of events) {
    if (event.kind !== "delta") lastStored = event.id;
    else if (lastStored !== undefined) expect(event.id).toBe(lastStored);
  }
}

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
    // The reply's end waits until the client has seen a frame. A reply whose words all reach the
    // worker within one frame interval sends none (its end event carries the text): with six words
    // 20 ms apart and nothing held, a worker kept off its core for the reply (a CI run; a SIGSTOP
    // of 150 ms does it) sent no frame.
    const words = ["Echo: hello from a socket", " 2", " 3", " 4", " 5", " 6"];
    fake.enqueue({ kind: "text", text: words.join(""), chunks: words, chunkDelayMs: 20, holdUntil: "a-frame-shown" });
    const ws = await connect();
    const session = newSession();
    await ws.subscribe(session);
    ws.send({ type: "send", session_id: session, text: "hello from a socket", client_message_id: "c-1" });
    const ack = await ws.waitFor((f) => f.type === "ack", 5000, "ack");
    expect(ack).toMatchObject({ client_message_id: "c-1", status: "accepted", session_id: session });
    await ws.waitFor((f) => f.type === "event" && f.kind === "delta", 15_000, "a delta frame");
    fake.release("a-frame-shown");
    const end = await ws.waitFor(isEnd, 15_000, "the end of the turn");
    expect(end.kind).toBe("turn.completed");

    const events = ws.events(session);
    expectEventIds(events);
    const main = events.filter((e) => ["message.queued", "turn.started", "delta", "turn.completed"].includes(e.kind ?? ""));
    const kinds = main.map((e) => e.kind);
    expect(kinds[0]).toBe("message.queued");
    expect(kinds[1]).toBe("turn.started");
    expect(kinds.at(-1)).toBe("turn.completed");
    expect(kinds.slice(2, -1).every((k) => k === "delta")).toBe(true);
    // Six words: at most one frame per word (coalescing is measured below).
    const frames = main.filter((e) => e.kind === "delta");
    expect(frames.length).toBeGreaterThanOrEqual(1);
    expect(frames.length).toBeLessThanOrEqual(6);
    const inboxId = main[0].data?.inbox_id;
    expect(main[1].data?.inbox_ids).toEqual([inboxId]);
    for (const frame of frames) expect(frame.data?.inbox_ids).toEqual([inboxId]);
    // A client subscribed for the whole turn misses no frame: each starts where the last ended,
    // and the completion adds what was still pending when the turn ended.
    const reply = streamedReply(events);
    expect(reply.gap).toBe(false);
    expect(frames[0].data?.offset).toBe(0);
    expect(reply.streamed).toBe(frames.map((e) => String(e.data?.text)).join(""));
    expect(reply.shown).toBe("Echo: hello from a socket 2 3 4 5 6");
    expect(end.data?.final_response).toBe(reply.shown);
    // The worker in the other process stored the turn in the shared database.
    const messages = await gw.gateway.store.getMessages(session);
    expect(messages.map((m) => [m.role, m.content])).toEqual([
      ["user", "hello from a socket"],
      ["assistant", reply.shown],
    ]);
    // The session's stream keeps the durable events only: no delta is stored.
    const stored = await storedEvents(session);
    expect(stored.some((e) => e.kind === "delta")).toBe(false);
    expect(stored.map((e) => e.kind)).toEqual(expect.arrayContaining(["message.queued", "turn.started", "turn.completed"]));
  });

  it("completes the reply for a client that attaches mid-turn, live or with since", async () => {
    fake.setDefault({ kind: "slow", chunks: 30, chunkDelayMs: 25 });
    const session = newSession();
    const first = await connect();
    await first.subscribe(session);
    first.send({ type: "send", session_id: session, text: "join me late", client_message_id: "late-1" });
    const started = await first.waitFor((f) => f.type === "event" && f.kind === "turn.started", 15_000, "turn.started");
    await first.waitFor(deltaWith("5"), 15_000, "a delta mid-turn");
    // One joins live (no since), one replays from the turn's start: neither saw the earlier frames.
    const live = await connect();
    const replaying = await connect();
    await Promise.all([live.subscribe(session), replaying.subscribe(session, started.id)]);
    const ends = await Promise.all([first, live, replaying].map((c) => c.waitFor(isEnd, 15_000, "the end of the turn")));
    const final = "Echo: join me late" + Array.from({ length: 29 }, (_, i) => ` ${i + 2}`).join("");
    for (const end of ends) expect(end.data?.final_response).toBe(final);

    const fromStart = streamedReply(first.events(session));
    expect(fromStart.gap).toBe(false);
    expect(fromStart.shown).toBe(final);
    const joinedLive = streamedReply(live.events(session));
    // It got frames, but not the first ones: its text has a gap that the completion fills.
    expect(joinedLive.frames.length).toBeGreaterThan(0);
    expect(joinedLive.frames[0].data?.offset).toBeGreaterThan(0);
    expect(joinedLive.gap).toBe(true);
    expect(joinedLive.shown).toBe(final);
    const replayed = replaying.events(session);
    expect(replayed.map((e) => e.kind)).not.toContain("turn.started"); // since is exclusive
    expect(streamedReply(replayed).shown).toBe(final);
    expectEventIds(replayed);

    // After the turn, a replay of the whole session has no deltas and the complete final text.
    const later = await connect();
    await later.subscribe(session, "0-0");
    const end = await later.waitFor(isEnd, 5000, "the replayed end of the turn");
    expect(later.events(session).some((e) => e.kind === "delta")).toBe(false);
    expect(streamedReply(later.events(session)).shown).toBe(final);
    expect(end.data?.final_response).toBe(final);
  });

  it("sends at most one delta frame per interval however fast the model streams", async () => {
    const words = 150;
    fake.setDefault({ kind: "slow", chunks: words, chunkDelayMs: 4 }); // a word every 4 ms for 0.6 s or more
    const ws = await connect();
    const session = newSession();
    await ws.subscribe(session);
    ws.send({ type: "send", session_id: session, text: "stream fast", client_message_id: "fast-1" });
    const end = await ws.waitFor(isEnd, 20_000, "the end of the turn");
    const events = ws.events(session);
    const started = events.find((e) => e.kind === "turn.started")!;
    const frames = events.filter((e) => e.kind === "delta");
    // The turn's own clock (the worker's timestamps): frames can be no more than one per interval.
    const streamingMs = end.ts! - started.ts!;
    expect(streamingMs).toBeGreaterThanOrEqual((words - 1) * 4);
    expect(frames.length).toBeGreaterThan(1);
    expect(frames.length).toBeLessThanOrEqual(Math.ceil(streamingMs / DELTA_FRAME_INTERVAL_MS) + 1);
    expect(frames.length).toBeLessThan(words); // coalesced: fewer frames than words
    const reply = streamedReply(events);
    expect(reply.gap).toBe(false);
    expect(reply.shown).toBe(end.data?.final_response);
    expect(String(end.data?.final_response)).toMatch(/^Echo: stream fast 2 3 .* 150$/);
  });

  it("stops a slow turn on an interrupt frame: turn.interrupted while the model still streams", async () => {
    fake.setDefault({ kind: "slow", chunks: 300, chunkDelayMs: 50 }); // 15 s if nobody stops it
    const abortedBefore = fake.stats.abortedStreams;
    const ws = await connect();
    const session = newSession();
    await ws.subscribe(session);
    ws.send({ type: "send", session_id: session, text: "a very long answer please", client_message_id: "long-1" });
    await ws.waitFor(deltaWith("3"), 15_000, "the third word");
    const completedBefore = fake.stats.completedStreams;
    ws.send({ type: "interrupt", session_id: session });
    const end = await ws.waitFor(isEnd, 5000, "the end of the interrupted turn");
    expect(end.kind).toBe("turn.interrupted");
    // Ended while the model's stream (15 s) had not finished: the interrupt ended it.
    expect(fake.stats.completedStreams).toBe(completedBefore);
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
    await first.waitFor(deltaWith("3"), 15_000, "a delta mid-turn");
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
    expectEventIds([...seen, ...replayed]);
    // Deltas may be left out of a replay; everything else must come, once, in order.
    const withoutDeltas = (events: Array<{ id?: string; kind?: string }>) => events.filter((e) => e.kind !== "delta").map((e) => `${e.id} ${e.kind}`);
    expect(withoutDeltas(replayed)).toEqual(withoutDeltas(missed));
    const missedIds = new Set(missed.map((e) => e.id));
    expect(replayed.every((e) => missedIds.has(e.id!))).toBe(true);
  });
});
