// A plain TCP forwarder: listens on one address and pipes every connection to a target (a TCP
// address or a unix socket). Lets a process in a network namespace reach a server that listens
// on the host's loopback only, over real TCP through the namespace's link.
import { createServer, connect, type Server, type Socket } from "node:net";

export type ForwardTarget = { host: string; port: number } | { path: string };

export interface TcpForwarder {
  host: string;
  port: number;
  close(): Promise<void>;
}

export async function startTcpForwarder(listenHost: string, target: ForwardTarget): Promise<TcpForwarder> {
  const sockets = new Set<Socket>();
  const track = (socket: Socket): void => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  };
  const server: Server = createServer((client) => {
    const upstream = connect(target);
    track(client);
    track(upstream);
    // Either side ending or failing ends both, as a real connection would.
    client.on("error", () => upstream.destroy());
    upstream.on("error", () => client.destroy());
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, listenHost, () => resolve());
  });
  const address = server.address();
  if (!address || typeof address === "string") throw new Error("the forwarder has no TCP address");
  return {
    host: listenHost,
    port: address.port,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
