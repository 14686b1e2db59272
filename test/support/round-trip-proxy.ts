// A TCP proxy in front of the test run's PostgreSQL that counts round trips: a client sending after
// the server last spoke starts a new one. Statements a client pipelines (sent before any answer)
// count once; statements that each wait for the previous answer count once each.
import { createServer, connect, type Server, type Socket } from "node:net";
import type { AddressInfo } from "node:net";
import { formatConnectionUrl, parseConnectionUrl, type ConnectionUrl } from "../../src/state/postgres/connection-url.js";

export interface RoundTripProxy {
  /** A connection string that reaches the same database through the proxy. */
  url: string;
  /** Round trips so far, on every connection. */
  roundTrips(): number;
  close(): Promise<void>;
}

/** Where the server listens: postgres://user@host:port/db, or a socket folder as ?host=/folder. */
function upstreamOf(url: ConnectionUrl): { path: string } | { host: string; port: number } {
  const port = Number(url.port || 5432);
  if (url.host.startsWith("/")) return { path: `${url.host}/.s.PGSQL.${port}` };
  return { host: url.host || "127.0.0.1", port };
}

export async function startRoundTripProxy(url: string): Promise<RoundTripProxy> {
  const given = parseConnectionUrl(url);
  const target = upstreamOf(given);
  let trips = 0;
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(target);
    sockets.add(client).add(upstream);
    let serverSpokeLast = true;
    client.on("data", (chunk) => {
      if (serverSpokeLast) trips++;
      serverSpokeLast = false;
      upstream.write(chunk);
    });
    upstream.on("data", (chunk) => {
      serverSpokeLast = true;
      client.write(chunk);
    });
    const end = (): void => {
      client.destroy();
      upstream.destroy();
    };
    client.on("close", end).on("error", end);
    upstream.on("close", end).on("error", end);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    // The same user, database and parameters (a test run's `options` among them), through the proxy.
    url: formatConnectionUrl({ ...given, host: "127.0.0.1", port: String(port) }),
    roundTrips: () => trips,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
