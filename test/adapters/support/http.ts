// Serves adapter routes on a loopback port, the way the gateway mounts them (at the root).
import express, { type Router } from "express";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { pino } from "pino";

export const silentLogger = pino({ level: "silent" });

export interface RunningApp {
  url: string;
  close(): Promise<void>;
}

export async function serveRouters(...routers: Router[]): Promise<RunningApp> {
  const app = express();
  for (const router of routers) app.use(router);
  const server = await new Promise<Server>((resolve) => {
    const s = app.listen(0, "127.0.0.1", () => resolve(s));
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
