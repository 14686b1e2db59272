// The LLM-bound benchmark's API-and-WebSocket clients, in their own process so the server's CPU and
// memory are measured apart from theirs: N sessions, each with a WebSocket subscribed to it; on
// `go` each sends one message through POST /v1/chat/completions (X-Session-Id) and its reply counts
// as delivered when the subscriber got the turn's end event with the fake model's full answer and
// the request answered 200. Times are process.hrtime (CLOCK_MONOTONIC, the runner's clock too).
// argv: gatewayUrl apiKey count tag
import { Agent, request } from "node:http";
import WebSocket from "ws";
import { fromParent, toParent } from "../lib/child.js";
import { fakeReply } from "../lib/fake-llm-reply.js";

export type WsTurnsCommand = { type: "go"; timeoutMs: number };
export type WsTurnsMessage =
  | { type: "ready"; subscribed: number }
  | {
      type: "done";
      /** Per delivered reply: send to the end event. */
      replyMs: number[];
      /** Per session that got one: send to its first delta frame. */
      firstDeltaMs: number[];
      deltaFrames: number;
      failed: number;
      errors: string[];
    }
  | { type: "error"; message: string };

const [gatewayUrl, apiKey, countArg, tag] = process.argv.slice(2);
const count = Number(countArg);
const wsUrl = `${gatewayUrl.replace(/^http/, "ws")}/ws?token=${encodeURIComponent(apiKey)}`;
const agent = new Agent({ keepAlive: true, maxSockets: count });

interface Session {
  id: string;
  text: string;
  socket: WebSocket | null;
  sentNs: bigint;
  firstDeltaNs: bigint | null;
  endNs: bigint | null;
  endText: string | null;
  status: number | null;
  error: string | null;
  settle: (() => void) | null;
}

const sessions: Session[] = Array.from({ length: count }, (_, i) => ({
  id: `llm-ws-${tag}-${i}`,
  text: `ws ${tag} session ${i}`,
  socket: null,
  sentNs: 0n,
  firstDeltaNs: null,
  endNs: null,
  endText: null,
  status: null,
  error: null,
  settle: null,
}));
let deltaFrames = 0;

function onFrame(session: Session, text: string): void {
  if (text.includes('"kind":"delta"')) {
    deltaFrames += 1;
    session.firstDeltaNs ??= process.hrtime.bigint();
    return;
  }
  if (!text.includes('"kind":"turn.')) return;
  const frame = JSON.parse(text) as { kind?: string; data?: { final_response?: string } };
  if (frame.kind !== "turn.completed" && frame.kind !== "turn.failed" && frame.kind !== "turn.interrupted") return;
  session.endNs = process.hrtime.bigint();
  session.endText = frame.data?.final_response ?? "";
  session.settle?.();
}

function subscribe(session: Session): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const ws = new WebSocket(wsUrl, { perMessageDeflate: false });
    let subscribed = false;
    ws.on("open", () => ws.send(JSON.stringify({ type: "subscribe", session_id: session.id })));
    ws.on("message", (data) => {
      const text = data.toString();
      if (subscribed) return onFrame(session, text);
      if (text.includes('"type":"subscribed"')) {
        subscribed = true;
        session.socket = ws;
        resolve();
      } else if (text.includes('"type":"error"')) reject(new Error(`subscribe refused: ${text}`));
    });
    ws.on("error", (err) => {
      if (!subscribed) reject(err);
    });
    ws.on("close", () => {
      if (!subscribed) reject(new Error("closed before subscribing"));
    });
  });
}

function send(session: Session): Promise<void> {
  return new Promise<void>((resolve) => {
    const body = JSON.stringify({ model: "fake-model", messages: [{ role: "user", content: session.text }] });
    const req = request(
      `${gatewayUrl}/v1/chat/completions`,
      { method: "POST", agent, headers: { "content-type": "application/json", authorization: `Bearer ${apiKey}`, "x-session-id": session.id } },
      (res) => {
        res.resume();
        res.on("end", () => {
          session.status = res.statusCode ?? 0;
          resolve();
        });
      },
    );
    req.on("error", (err) => {
      session.status = -1;
      session.error = err.message;
      resolve();
    });
    req.end(body);
  });
}

/** Resolves when the session's end event came, or at the deadline. */
function ended(session: Session, deadline: number): Promise<void> {
  if (session.endNs !== null) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, Math.max(0, deadline - Date.now()));
    session.settle = () => {
      clearTimeout(timer);
      resolve();
    };
  });
}

async function go(timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const requests = sessions.map((s) => {
    s.sentNs = process.hrtime.bigint();
    return send(s);
  });
  await Promise.all([...requests, ...sessions.map((s) => ended(s, deadline))]);
  const replyMs: number[] = [];
  const firstDeltaMs: number[] = [];
  const errors: string[] = [];
  let failed = 0;
  for (const s of sessions) {
    if (s.firstDeltaNs !== null) firstDeltaMs.push(Number(s.firstDeltaNs - s.sentNs) / 1e6);
    if (s.status === 200 && s.endNs !== null && s.endText === fakeReply(s.text)) {
      replyMs.push(Number(s.endNs - s.sentNs) / 1e6);
      continue;
    }
    failed += 1;
    if (errors.length < 3) errors.push(`${s.id}: status ${s.status ?? "none"}${s.error ? ` (${s.error})` : ""}, end event ${s.endNs === null ? "missing" : JSON.stringify(s.endText?.slice(0, 80))}`);
  }
  toParent<WsTurnsMessage>({ type: "done", replyMs, firstDeltaMs, deltaFrames, failed, errors });
}

try {
  // A few connections at a time, as clients arrive.
  let next = 0;
  await Promise.all(
    Array.from({ length: 50 }, async () => {
      while (next < sessions.length) await subscribe(sessions[next++]);
    }),
  );
  toParent<WsTurnsMessage>({ type: "ready", subscribed: sessions.filter((s) => s.socket).length });
} catch (err) {
  toParent<WsTurnsMessage>({ type: "error", message: (err as Error).message });
}

fromParent<WsTurnsCommand>((command) => {
  if (command.type === "go") void go(command.timeoutMs);
});

process.on("SIGTERM", () => {
  for (const s of sessions) s.socket?.terminate();
  agent.destroy();
  process.exit(0);
});
