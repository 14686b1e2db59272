// A local HTTP server that stands in for a webhook sender's callback endpoint: answers 200 and
// counts the replies it receives. In this process, or in a child of its own.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { CallbackSinkIn, CallbackSinkOut } from "../children/callback-sink.js";
import { spawnChild } from "./child.js";

export interface CallbackSink {
  url: string;
  /** Distinct deliveries received (repeats of one delivery id count once). */
  received(): number;
  close(): Promise<void>;
}

export async function startCallbackSink(): Promise<CallbackSink> {
  const ids = new Set<string>();
  const server: Server = createServer((req, res) => {
    const id = req.headers["x-github-delivery"] ?? req.headers["webhook-id"];
    req.resume();
    req.on("end", () => {
      if (typeof id === "string") ids.add(id);
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/callback`,
    received: () => ids.size,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The sink in a child process: the runner asks it for its count over IPC. */
export interface CallbackSinkProcess {
  url: string;
  received(): Promise<number>;
  close(): Promise<void>;
}

export async function startCallbackSinkProcess(): Promise<CallbackSinkProcess> {
  const child = spawnChild<CallbackSinkIn, CallbackSinkOut>("callback-sink.ts");
  const { url } = await child.next((m): m is Extract<CallbackSinkOut, { type: "ready" }> => m.type === "ready", 30_000);
  let asks = 0;
  return {
    url,
    async received() {
      const ask = ++asks;
      child.send({ type: "count", ask });
      const answer = await child.next((m): m is Extract<CallbackSinkOut, { type: "count" }> => m.type === "count" && m.ask === ask, 10_000);
      return answer.received;
    },
    close: () => child.stop(),
  };
}
