// The WebSocket hub on `/ws`: authenticates the upgrade, validates each frame, and routes it —
// subscriptions to the registry, `send` and `interrupt` to the gateway ingress.
//
// Frame size: frames up to `maxFrameBytes` are handled; larger ones up to `closeFrameBytes` get a
// `frame_too_large` error frame and the connection lives on; beyond that `ws` closes the
// connection with 1009 (it must not buffer unbounded input to answer politely).
// Backpressure: a client whose unsent bytes exceed `maxBufferedBytes` is terminated; it reconnects
// and subscribes with `since` to get what it missed.
// Upgrades are refused, in this order: a host name the gateway does not answer (421), a page of
// another origin (403), a bad or missing token (401) or too many wrong ones (429), and beyond the
// connection caps, per process and per client address (503 with Retry-After).
import type { IncomingMessage, Server } from "node:http";
import type { Duplex } from "node:stream";
import type { Logger } from "pino";
import { WebSocketServer, type RawData, type WebSocket } from "ws";
import type { AcceptResult, GatewayIngress } from "../../gateway/types.js";
import { NO_EXTRA_BROWSER_RULES, originAllowed } from "../browser-rules.js";
import { authorise, refuseUpgrade, type Authenticate } from "./auth.js";
import { HubClient } from "./client.js";
import {
  ackFrame,
  frameError,
  parseClientFrame,
  subscribedFrame,
  unsubscribedFrame,
  type ClientFrame,
  type InterruptFrame,
  type SendFrame,
  type SubscribeFrame,
} from "./frames.js";
import { startHeartbeat } from "./heartbeat.js";
import { SubscriptionRegistry, type HubEventSource } from "./subscriptions.js";

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
/** What a client refused for the caps is told to wait before trying again. */
const FULL_RETRY_AFTER_SECONDS = 5;

export function attachWebSocketHub(server: Server, deps: WebSocketHubDeps): WebSocketHub {
  const path = deps.path ?? "/ws";
  const maxFrameBytes = deps.maxFrameBytes ?? 64 * KIB;
  const closeFrameBytes = Math.max(deps.closeFrameBytes ?? 1024 * KIB, maxFrameBytes);
  const maxSubscriptions = deps.maxSubscriptionsPerClient ?? 100;
  const logger = deps.logger;
  const clientOptions = {
    maxBufferedBytes: deps.maxBufferedBytes ?? 8 * 1024 * KIB,
    maxQueuedFrames: deps.maxQueuedFrames ?? 256,
    logger,
  };

  const wss = new WebSocketServer({ noServer: true, maxPayload: closeFrameBytes, perMessageDeflate: false, clientTracking: false });
  const clients = new Set<HubClient>();
  const registry = new SubscriptionRegistry(deps.bus, logger);
  const stopHeartbeat = startHeartbeat(() => clients, deps.heartbeatIntervalMs ?? 30_000);
  const hostAllowed = deps.hostAllowed ?? (() => true);
  const isOriginAllowed = deps.originAllowed ?? ((req: IncomingMessage) => originAllowed(req, NO_EXTRA_BROWSER_RULES));
  const addressOf = deps.clientAddress ?? ((req: IncomingMessage) => req.socket.remoteAddress ?? "unknown");
  const connections = new ConnectionCounts(deps.maxConnections ?? DEFAULT_MAX_CONNECTIONS, deps.maxConnectionsPerAddress ?? DEFAULT_MAX_CONNECTIONS_PER_ADDRESS);
  let closed = false;

  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    socket.on("error", () => undefined);
    const url = new URL(req.url ?? "/", "http://localhost");
    if (url.pathname !== path) {
      // Leave other paths to other upgrade handlers, if there are any.
      if (server.listenerCount("upgrade") === 1) refuseUpgrade(socket, "not_found");
      return;
    }
    if (closed) return refuseUpgrade(socket, "unavailable");
    if (!hostAllowed(req)) {
      return refuseUpgrade(socket, "host_not_allowed");
    }
    if (!isOriginAllowed(req)) {
      logger.info({ origin: req.headers.origin }, "websocket upgrade refused: origin not allowed");
      return refuseUpgrade(socket, "origin_not_allowed", { message: "pages from this origin may not connect; see ALLOWED_ORIGINS" });
    }
    const address = addressOf(req);
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
    wss.handleUpgrade(req, socket, head, (ws) => onConnection(ws));
  };

  const onConnection = (ws: WebSocket): void => {
    const client = new HubClient(ws, clientOptions);
    clients.add(client);
    logger.debug({ client: client.id }, "websocket client connected");
    ws.on("message", (data, isBinary) => onFrame(client, data, isBinary));
    ws.on("error", (err) => logger.debug({ err, client: client.id }, "websocket client error"));
    ws.on("close", (code) => {
      clients.delete(client);
      registry.removeClient(client);
      logger.debug({ client: client.id, code }, "websocket client disconnected");
    });
  };

  const onFrame = (client: HubClient, data: RawData, isBinary: boolean): void => {
    const size = byteLength(data);
    if (size > maxFrameBytes) {
      return client.enqueue(() =>
        client.sendErrorFrame({ code: "frame_too_large", message: `frame of ${size} bytes exceeds the limit of ${maxFrameBytes} bytes` }),
      );
    }
    if (isBinary) {
      return client.enqueue(() => client.sendErrorFrame({ code: "bad_frame", message: "binary frames are not supported; send JSON text" }));
    }
    const parsed = parseClientFrame(rawText(data));
    if (!parsed.ok) return client.enqueue(() => client.sendErrorFrame(parsed));
    client.enqueue(() => dispatch(client, parsed.frame));
  };

  const dispatch = async (client: HubClient, frame: ClientFrame): Promise<void> => {
    switch (frame.type) {
      case "subscribe":
        return subscribe(client, frame);
      case "unsubscribe":
        registry.unsubscribe(client, frame.session_id);
        return client.send(unsubscribedFrame(frame.session_id));
      case "send":
        return send(client, frame);
      case "interrupt":
        return interrupt(client, frame);
    }
  };

  const subscribe = async (client: HubClient, frame: SubscribeFrame): Promise<void> => {
    if (!client.sessions.has(frame.session_id) && client.sessions.size >= maxSubscriptions) {
      return client.sendErrorFrame(
        { code: "too_many_subscriptions", message: `at most ${maxSubscriptions} subscriptions per connection` },
        { session_id: frame.session_id },
      );
    }
    try {
      await registry.subscribe(client, frame.session_id, frame.since);
    } catch (err) {
      logger.error({ err, sessionId: frame.session_id }, "websocket subscribe failed");
      return client.sendErrorFrame(frameError("unavailable"), { session_id: frame.session_id });
    }
    client.send(subscribedFrame(frame.session_id));
  };

  const send = async (client: HubClient, frame: SendFrame): Promise<void> => {
    let outcome;
    try {
      outcome = await deps.onSend(frame);
    } catch (err) {
      logger.error({ err, sessionId: frame.session_id }, "websocket send: the gateway did not accept the message");
      return client.sendErrorFrame(
        { code: "internal", message: "the message was not accepted; retry" },
        { session_id: frame.session_id, ...(frame.client_message_id ? { client_message_id: frame.client_message_id } : {}) },
      );
    }
    const { clientMessageId, result } = outcome;
    if (result.status === "rejected") {
      return client.send(
        ackFrame({ client_message_id: clientMessageId, status: "rejected", session_id: frame.session_id, reason: result.reason }),
      );
    }
    client.send(ackFrame({ client_message_id: clientMessageId, status: result.status, session_id: result.sessionId }));
  };

  const interrupt = async (client: HubClient, frame: InterruptFrame): Promise<void> => {
    try {
      await deps.ingress.interrupt(frame.session_id, {
        ...(frame.text !== undefined ? { text: frame.text } : {}),
        ...(frame.hard !== undefined ? { hard: frame.hard } : {}),
      });
    } catch (err) {
      logger.error({ err, sessionId: frame.session_id }, "websocket interrupt failed");
      client.sendErrorFrame({ code: "internal", message: "the interrupt was not delivered; retry" }, { session_id: frame.session_id });
    }
  };

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
      const closing = [...clients].map(
        (client) =>
          new Promise<void>((resolve) => {
            if (client.socket.readyState === client.socket.CLOSED) return resolve();
            const timer = setTimeout(() => client.terminate(), CLOSE_GRACE_MS);
            client.socket.once("close", () => {
              clearTimeout(timer);
              resolve();
            });
            client.socket.close(1001, "server shutting down");
          }),
      );
      await Promise.all(closing);
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}

/** Open connections, in total and per client address, against their caps. */
class ConnectionCounts {
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

function byteLength(data: RawData): number {
  if (Array.isArray(data)) return data.reduce((sum, part) => sum + part.length, 0);
  return data instanceof ArrayBuffer ? data.byteLength : data.length;
}

function rawText(data: RawData): string {
  if (Array.isArray(data)) return Buffer.concat(data).toString("utf8");
  if (data instanceof ArrayBuffer) return Buffer.from(data).toString("utf8");
  return data.toString("utf8");
}
