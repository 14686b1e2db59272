// The ingress benchmark's floor: a bare node:http server, in a process of its own as the gateway
// is, that reads each request and answers 202 with a two-byte body. Loaded by the same generator
// at the same rate, its ack latency is what this machine and that generator allow before the
// gateway does any work.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { toParent } from "../lib/child.js";

export type PlainHttpServerOut = { type: "ready"; url: string } | { type: "error"; message: string };

const server = createServer((req, res) => {
  req.resume();
  req.on("end", () => res.writeHead(202, { "content-type": "application/json", "content-length": "2" }).end("{}"));
});
server.keepAliveTimeout = 30_000;
server.on("error", (err) => toParent<PlainHttpServerOut>({ type: "error", message: err.message }));
server.listen(0, "127.0.0.1", () => {
  const { port } = server.address() as AddressInfo;
  toParent<PlainHttpServerOut>({ type: "ready", url: `http://127.0.0.1:${port}` });
});
process.once("SIGTERM", () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
