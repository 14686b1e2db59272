// The WebSocket hub on `/ws`: its parts, one concern per file, wired together here —
// upgrade-gate.ts decides which upgrades become connections, client.ts is one connection (its
// send queue and backpressure), frame-router.ts checks and routes each frame, subscriptions.ts
// relays the bus's events to subscribed clients, heartbeat.ts drops clients that stop answering.
//
// Frame size: frames up to `maxFrameBytes` are handled; larger ones up to `closeFrameBytes` get a
// `frame_too_large` error frame and the connection lives on; beyond that `ws` closes the
// connection with 1009 (it must not buffer unbounded input to answer politely).
// Backpressure: a client whose unsent bytes exceed `maxBufferedBytes` is terminated; it reconnects
// and subscribes with `since` to get what it missed.
import type { IncomingMessage, Server } from "node:http";
import type { Logger } from "pino";
import { WebSocketServer, type WebSocket } from "ws";
import type { AcceptResult, GatewayIngress } from "../../gateway/types.js";
import { NO_EXTRA_BROWSER_RULES, originAllowed } from "../browser-rules.js";
import type { Authenticate } from "./auth.js";
import { HubClient, type HubClientOptions } from "./client.js";
import { createFrameRouter, type FrameHandler } from "./frame-router.js";
import type { SendFrame } from "./frames.js";
import { startHeartbeat } from "./heartbeat.js";
import { SubscriptionRegistry, type HubEventSource } from "./subscriptions.js";
import { ConnectionCounts, createUpgradeGate } from "./upgrade-gate.js";

export interface WebSocketHubDeps {
  /** The EventBus (only subscribe and replay are used). */
  bus: HubEventSource;
  /** Interrupts go here. */
  ingress: GatewayIngress;
  /**
   * A `send` frame, handed to the websocket adapter (which turns it into an InboundMessage);
   * resolves with the client message id used and the ingress result.
   */
  onSend: (frame: SendFrame) => Promise<{ clientMessageId: string; result: AcceptResult }>;
  authenticate: Authenticate;
  /** Whether the request's host name is answered at all (421 if not). Default: every host. */
  hostAllowed?: (req: IncomingMessage) => boolean;
  /** Whether the request's Origin may connect (403 if not). Default: none, or the gateway's own. */
  originAllowed?: (req: IncomingMessage) => boolean;
  /** The address connections are counted against. Default: the socket's peer. */
  clientAddress?: (req: IncomingMessage) => string;
  /** Open connections in this process; beyond, upgrades get 503. Default 10,000. */
  maxConnections?: number;
  /** Open connections per client address; beyond, upgrades get 503. Default 1,000. */
  maxConnectionsPerAddress?: number;
  logger: Logger;
  /** Largest frame handled (bytes); larger ones get a `frame_too_large` error. Default 64 KiB. */
  maxFrameBytes?: number;
  /** Frames larger than this close the connection with 1009. Default max(1 MiB, maxFrameBytes). */
  closeFrameBytes?: number;
  /** Default 100. */
  maxSubscriptionsPerClient?: number;
  /** Ping interval; a client that misses one pong is terminated. Default 30 s. */
  heartbeatIntervalMs?: number;
  /** Unsent bytes after which a slow client is dropped. Default 8 MiB. */
  maxBufferedBytes?: number;
  /** Frames waiting per client before `busy`. Default 256. */
  maxQueuedFrames?: number;
  /** Default `/ws`. */
  path?: string;
}

export interface WebSocketHub {
  readonly clientCount: number;
  /** Sessions with at least one local subscriber. */
  readonly sessionCount: number;
  /** Close every client (1001), stop heartbeats and bus subscriptions, stop taking upgrades. */
  close(): Promise<void>;
}

const KIB = 1024;
const CLOSE_GRACE_MS = 1000;
export const DEFAULT_MAX_CONNECTIONS = 10_000;
export const DEFAULT_MAX_CONNECTIONS_PER_ADDRESS = 1_000;

export function attachWebSocketHub(server: Server, deps: WebSocketHubDeps): WebSocketHub {
  const logger = deps.logger;
  const maxFrameBytes = deps.maxFrameBytes ?? 64 * KIB;
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: Math.max(deps.closeFrameBytes ?? 1024 * KIB, maxFrameBytes),
    perMessageDeflate: false,
    clientTracking: false,
  });
  const clients = new Set<HubClient>();
  const registry = new SubscriptionRegistry(deps.bus, logger);
  const stopHeartbeat = startHeartbeat(() => clients, deps.heartbeatIntervalMs ?? 30_000);
  const onFrame = createFrameRouter({
    registry,
    ingress: deps.ingress,
    onSend: deps.onSend,
    logger,
    maxFrameBytes,
    maxSubscriptions: deps.maxSubscriptionsPerClient ?? 100,
  });
  const clientOptions: HubClientOptions = {
    maxBufferedBytes: deps.maxBufferedBytes ?? 8 * 1024 * KIB,
    maxQueuedFrames: deps.maxQueuedFrames ?? 256,
    logger,
  };
  let closed = false;

  const onUpgrade = createUpgradeGate({
    server,
    path: deps.path ?? "/ws",
    closed: () => closed,
    hostAllowed: deps.hostAllowed ?? (() => true),
    originAllowed: deps.originAllowed ?? ((req: IncomingMessage) => originAllowed(req, NO_EXTRA_BROWSER_RULES)),
    authenticate: deps.authenticate,
    clientAddress: deps.clientAddress ?? ((req: IncomingMessage) => req.socket.remoteAddress ?? "unknown"),
    connections: new ConnectionCounts(deps.maxConnections ?? DEFAULT_MAX_CONNECTIONS, deps.maxConnectionsPerAddress ?? DEFAULT_MAX_CONNECTIONS_PER_ADDRESS),
    logger,
    admit: (req, socket, head) => wss.handleUpgrade(req, socket, head, (ws) => connect(ws, clientOptions, { clients, registry, onFrame, logger })),
  });
  server.on("upgrade", onUpgrade);

  return {
    get clientCount() {
      return clients.size;
    },
    get sessionCount() {
      return registry.sessionCount;
    },
    async close() {
      if (closed) return;
      closed = true;
      server.off("upgrade", onUpgrade);
      stopHeartbeat();
      registry.close();
      await Promise.all([...clients].map(closeClient));
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}

interface HubParts {
  clients: Set<HubClient>;
  registry: SubscriptionRegistry;
  onFrame: FrameHandler;
  logger: Logger;
}

/** A completed handshake: a client whose frames are routed until it closes. */
function connect(ws: WebSocket, options: HubClientOptions, { clients, registry, onFrame, logger }: HubParts): void {
  const client = new HubClient(ws, options);
  clients.add(client);
  logger.debug({ client: client.id }, "websocket client connected");
  ws.on("message", (data, isBinary) => onFrame(client, data, isBinary));
  ws.on("error", (err) => logger.debug({ err, client: client.id }, "websocket client error"));
  ws.on("close", (code) => {
    clients.delete(client);
    registry.removeClient(client);
    logger.debug({ client: client.id, code }, "websocket client disconnected");
  });
}

/** Closes a client with 1001; one that does not close within the grace time is terminated. */
function closeClient(client: HubClient): Promise<void> {
  return new Promise<void>((resolve) => {
    if (client.socket.readyState === client.socket.CLOSED) return resolve();
    const timer = setTimeout(() => client.terminate(), CLOSE_GRACE_MS);
    client.socket.once("close", () => {
      clearTimeout(timer);
      resolve();
    });
    client.socket.close(1001, "server shutting down");
  });
}
