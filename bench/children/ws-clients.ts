// The WebSocket fan-out benchmark's clients, in their own process so the server's memory and CPU
// are measured apart from theirs: N connections subscribed to one session, each noting when an
// event arrives (process.hrtime: CLOCK_MONOTONIC, comparable with the runner's clock).
// argv: wsUrl sessionId count connectConcurrency
import WebSocket from "ws";
import { toParent } from "../lib/child.js";

export type WsClientsMessage =
  | { type: "progress"; subscribed: number }
  | { type: "ready"; subscribed: number }
  | { type: "event-done"; seq: number; latenciesMs: number[]; alive: number }
  | { type: "error"; message: string };

const [wsUrl, sessionId, countArg, concurrencyArg] = process.argv.slice(2);
const count = Number(countArg);
const concurrency = Number(concurrencyArg);
const sockets: WebSocket[] = [];
let alive = 0;
let closedEarly = 0;
const arrivals = new Map<number, number[]>();
const SEQ = /"seq":(\d+),"sent_ns":"(\d+)"/;

function onEventFrame(text: string): void {
  const match = SEQ.exec(text);
  if (!match) return;
  const now = process.hrtime.bigint();
  const seq = Number(match[1]);
  const latency = Number(now - BigInt(match[2])) / 1e6;
  let list = arrivals.get(seq);
  if (!list) arrivals.set(seq, (list = []));
  list.push(latency);
  if (list.length === alive) {
    toParent<WsClientsMessage>({ type: "event-done", seq, latenciesMs: list, alive });
    arrivals.delete(seq);
  }
}

function connect(): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const ws = new WebSocket(wsUrl, { perMessageDeflate: false });
    let subscribed = false;
    ws.on("open", () => ws.send(JSON.stringify({ type: "subscribe", session_id: sessionId })));
    ws.on("message", (data) => {
      const text = data.toString();
      if (!subscribed) {
        if (text.includes('"type":"subscribed"')) {
          subscribed = true;
          alive++;
          sockets.push(ws);
          resolve();
        } else if (text.includes('"type":"error"')) reject(new Error(`subscribe refused: ${text}`));
        return;
      }
      onEventFrame(text);
    });
    ws.on("error", (err) => {
      if (!subscribed) reject(err);
    });
    ws.on("close", () => {
      if (!subscribed) return reject(new Error("closed before subscribing"));
      alive--;
      closedEarly++;
    });
  });
}

try {
  let next = 0;
  let done = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        next++;
        await connect();
        done++;
        if (done % 250 === 0) toParent<WsClientsMessage>({ type: "progress", subscribed: done });
      }
    }),
  );
  toParent<WsClientsMessage>({ type: "ready", subscribed: alive });
} catch (err) {
  toParent<WsClientsMessage>({ type: "error", message: (err as Error).message });
}

process.on("SIGTERM", () => {
  if (closedEarly) console.error(`ws-clients: ${closedEarly} connection(s) closed by the server during the run`);
  for (const ws of sockets) ws.terminate();
  process.exit(0);
});
