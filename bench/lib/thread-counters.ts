// How the runner reads the counting preload's counts from every thread of the server process.
// Each thread counts its own (a worker thread has its own better-sqlite3 and ioredis modules);
// the main thread serves them all on a Unix socket, asking the other threads over a
// BroadcastChannel, which needs no handle from the code that started them. No signal: serve
// takes SIGUSR2 as its crash drill for the workers thread.
import { connect, createServer } from "node:net";
import { BroadcastChannel, isMainThread, threadId } from "node:worker_threads";
import type { Counters, ProcessCounters, ThreadCounters } from "./process-counters.js";

const CHANNEL = "switchboard-bench-counters";
/** A thread that has not answered by then is taken for dead. */
const REPLY_TIMEOUT_MS = 5_000;

type ChannelMessage =
  | { type: "hello"; threadId: number }
  | { type: "collect"; id: number }
  | { type: "counters"; id: number; threadId: number; counters: Counters };

/** In every counting thread: the main thread serves `socketPath`, the others answer it. */
export function shareCounters(socketPath: string, counters: Counters): void {
  const channel = new BroadcastChannel(CHANNEL);
  if (!isMainThread) {
    channel.onmessage = (event) => {
      const message = (event as { data: ChannelMessage }).data;
      if (message.type === "collect") channel.postMessage({ type: "counters", id: message.id, threadId, counters } satisfies ChannelMessage);
    };
    channel.postMessage({ type: "hello", threadId } satisfies ChannelMessage);
    // Neither keeps the thread running.
    channel.unref();
    return;
  }
  const others = new Set<number>();
  const pending = new Map<number, (reply: ThreadCounters) => void>();
  channel.onmessage = (event) => {
    const message = (event as { data: ChannelMessage }).data;
    if (message.type === "hello") others.add(message.threadId);
    else if (message.type === "counters") pending.get(message.id)?.({ threadId: message.threadId, counters: message.counters });
  };
  channel.unref();
  let requests = 0;
  const collect = (): Promise<ProcessCounters> => {
    const id = ++requests;
    const waitingFor = new Set(others);
    const threads: ThreadCounters[] = [{ threadId, counters }];
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        pending.delete(id);
        for (const dead of waitingFor) others.delete(dead);
        resolve({ threads, unanswered: [...waitingFor] });
      };
      const timer = setTimeout(done, REPLY_TIMEOUT_MS);
      pending.set(id, (reply) => {
        if (!waitingFor.delete(reply.threadId)) return;
        threads.push(reply);
        if (waitingFor.size === 0) done();
      });
      if (waitingFor.size === 0) done();
      else channel.postMessage({ type: "collect", id } satisfies ChannelMessage);
    });
  };
  const server = createServer((socket) => {
    void collect().then((reply) => socket.end(JSON.stringify(reply)));
  });
  server.listen(socketPath);
  server.unref();
}

/** The runner's side: every thread's counts as they are now. */
export function readProcessCounters(socketPath: string): Promise<ProcessCounters> {
  return new Promise((resolve, reject) => {
    const socket = connect(socketPath);
    let text = "";
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => (text += chunk));
    socket.on("error", reject);
    socket.on("end", () => {
      try {
        resolve(JSON.parse(text) as ProcessCounters);
      } catch (err) {
        reject(err as Error);
      }
    });
  });
}
