// A local HTTP server that stands in for a webhook sender's callback endpoint: answers 200 and
// counts the replies it receives.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

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
