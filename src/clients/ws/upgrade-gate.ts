// Which upgrade requests on the hub's path become connections. Refused, in this order: a hub that
// is closing (503), a host name the gateway does not answer (421), a page of another origin (403),
// a bad or missing token (401) or too many wrong ones (429), and beyond the connection caps, per
// process and per client address (503 with Retry-After). Other paths are left to other upgrade
// handlers.
import type { IncomingMessage, Server } from "node:http";
import type { Duplex } from "node:stream";
import type { Logger } from "pino";
import { authorise, refuseUpgrade, type Authenticate } from "./auth.js";

/** What a client refused for the caps is told to wait before trying again. */
const FULL_RETRY_AFTER_SECONDS = 5;

export interface UpgradeGateDeps {
  server: Server;
  /** The hub's path (`/ws`). */
  path: string;
  /** Whether the hub has closed. */
  closed: () => boolean;
  hostAllowed: (req: IncomingMessage) => boolean;
  originAllowed: (req: IncomingMessage) => boolean;
  authenticate: Authenticate;
  /** The address connections are counted against. */
  clientAddress: (req: IncomingMessage) => string;
  connections: ConnectionCounts;
  logger: Logger;
  /** Completes the handshake of an admitted request; its connection slot is held until the socket closes. */
  admit: (req: IncomingMessage, socket: Duplex, head: Buffer) => void;
}

export type UpgradeHandler = (req: IncomingMessage, socket: Duplex, head: Buffer) => void;

export function createUpgradeGate(deps: UpgradeGateDeps): UpgradeHandler {
  const { server, path, hostAllowed, connections, logger } = deps;
  return (req, socket, head) => {
    socket.on("error", () => undefined);
    const url = new URL(req.url ?? "/", "http://localhost");
    if (url.pathname !== path) {
      // Leave other paths to other upgrade handlers, if there are any.
      if (server.listenerCount("upgrade") === 1) refuseUpgrade(socket, "not_found");
      return;
    }
    if (deps.closed()) return refuseUpgrade(socket, "unavailable");
    if (!hostAllowed(req)) {
      return refuseUpgrade(socket, "host_not_allowed");
    }
    if (!deps.originAllowed(req)) {
      logger.info({ origin: req.headers.origin }, "websocket upgrade refused: origin not allowed");
      return refuseUpgrade(socket, "origin_not_allowed", { message: "pages from this origin may not connect; see ALLOWED_ORIGINS" });
    }
    const address = deps.clientAddress(req);
    const auth = authorise(deps.authenticate, req, url);
    if (typeof auth === "object") {
      return refuseUpgrade(socket, "too_many_failed_keys", { retryAfterSeconds: auth.retryAfterSeconds });
    }
    if (!auth) {
      logger.info({ remote: address }, "websocket upgrade refused: bad or missing token");
      return refuseUpgrade(socket, "unauthorized");
    }
    const full = connections.fullFor(address);
    if (full) {
      logger.info({ remote: address, limit: full }, "websocket upgrade refused: connection cap reached");
      return refuseUpgrade(socket, "too_many_connections", {
        message: full === "process" ? "this gateway has as many WebSocket connections as it takes" : "too many WebSocket connections from this address",
        retryAfterSeconds: FULL_RETRY_AFTER_SECONDS,
      });
    }
    // The slot is held from here until the socket closes, whether or not the handshake completes.
    connections.open(address);
    socket.once("close", () => connections.closed(address));
    deps.admit(req, socket, head);
  };
}

/** Open connections, in total and per client address, against their caps. */
export class ConnectionCounts {
  private total = 0;
  private readonly perAddress = new Map<string, number>();

  constructor(
    private readonly max: number,
    private readonly maxPerAddress: number,
  ) {}

  /** Which cap a new connection from `address` would break, if any. */
  fullFor(address: string): "process" | "address" | null {
    if (this.total >= this.max) return "process";
    if ((this.perAddress.get(address) ?? 0) >= this.maxPerAddress) return "address";
    return null;
  }

  open(address: string): void {
    this.total++;
    this.perAddress.set(address, (this.perAddress.get(address) ?? 0) + 1);
  }

  closed(address: string): void {
    this.total--;
    const left = (this.perAddress.get(address) ?? 1) - 1;
    if (left > 0) this.perAddress.set(address, left);
    else this.perAddress.delete(address);
  }
}
