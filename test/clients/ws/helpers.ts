// Test helpers for the WebSocket hub: a real HTTP server with the hub on loopback, a real Redis
// event bus under a unique prefix, a recording ingress, and a client that reads frames in order.
import { acceptSend } from "../../../src/clients/ws/index.js";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { timingSafeEqual } from "node:crypto";
import { pino } from "pino";
import type { Redis } from "ioredis";
import { WebSocket, type ClientOptions } from "ws";
import { EventBus } from "../../../src/bus/event-bus.js";
import type { AcceptResult, GatewayIngress, InboundMessage, TurnOutcome } from "../../../src/gateway/types.js";
import { attachWebSocketHub, type WebSocketHub, type WebSocketHubDeps } from "../../../src/clients/ws/index.js";
import { deletePrefix, newRedisClient, uniquePrefix } from "../../support/redis.js";

export const TOKEN = "test-token-7f3a";
export const silentLogger = pino({ level: "silent" });

export function checkToken(token: string | null): boolean {
  if (token === null) return false;
  const given = Buffer.from(token);
  const expected = Buffer.from(TOKEN);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** A GatewayIngress that records what it was given. */
export class RecordingIngress implements GatewayIngress {
  readonly accepted: InboundMessage[] = [];
  readonly interrupts: Array<{ sessionId: string; options: { text?: string; hard?: boolean } }> = [];
  reject: string | null = null;
  private readonly seen = new Map<string, number>();

  async accept(message: InboundMessage): Promise<AcceptResult> {
    this.accepted.push(message);
    if (this.reject) return { status: "rejected", reason: this.reject };
    const key = `${message.platform}/${message.platformMessageId}`;
    const existing = this.seen.get(key);
    if (existing !== undefined) return { status: "duplicate", inboxId: existing, sessionId: message.sessionId ?? "?" };
    const inboxId = this.seen.size + 1;
    this.seen.set(key, inboxId);
    return { status: "accepted", inboxId, sessionId: message.sessionId ?? "?", enqueued: true };
  }

  async waitForOutcome(): Promise<TurnOutcome> {
    throw new Error("not used by the hub");
  }

  async recordRejected(message: InboundMessage, reason: string): Promise<AcceptResult> {
    this.accepted.push(message);
    return { status: "rejected", reason };
  }

  async recordDeliveryReceipt(): Promise<boolean> {
    throw new Error("not used by the hub");
  }

  async interrupt(sessionId: string, options: { text?: string; hard?: boolean }): Promise<void> {
    this.interrupts.push({ sessionId, options });
  }
}

export interface HubFixture {
  prefix: string;
  redis: Redis;
  bus: EventBus;
  server: Server;
  hub: WebSocketHub;
  ingress: RecordingIngress;
  port: number;
  url(query?: string): string;
  close(): Promise<void>;
}

/** A hub on its own HTTP server; pass `prefix` to share a bus keyspace with another fixture. */
export async function startHub(
  options: Partial<Omit<WebSocketHubDeps, "bus" | "ingress" | "onSend" | "logger">> & { prefix?: string } = {},
): Promise<HubFixture> {
  const prefix = options.prefix ?? uniquePrefix("ws");
  const redis = newRedisClient();
  const bus = new EventBus({ redis, prefix });
  const server = createServer((_req, res) => res.writeHead(404).end());
  const ingress = new RecordingIngress();
  const hub = attachWebSocketHub(server, {
    authenticate: checkToken,
    ...options,
    bus,
    ingress,
    onSend: (frame) => acceptSend(ingress, frame),
    logger: silentLogger,
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    prefix,
    redis,
    bus,
    server,
    hub,
    ingress,
    port,
    url: (query = `token=${TOKEN}`) => `ws://127.0.0.1:${port}/ws${query ? `?${query}` : ""}`,
    async close() {
      await hub.close();
      await bus.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      if (!options.prefix) await deletePrefix(redis, prefix);
      redis.disconnect();
    },
  };
}

export type Frame = Record<string, unknown> & { type: string };

/** A ws client that queues every frame it receives, for in-order assertions. */
export class TestClient {
  readonly frames: Frame[] = [];
  private cursor = 0;
  private waiters: Array<() => void> = [];
  closeCode: number | null = null;
  readonly closed: Promise<number>;

  private constructor(readonly socket: WebSocket) {
    socket.on("message", (data) => {
      this.frames.push(JSON.parse(data.toString()) as Frame);
      this.wake();
    });
    this.closed = new Promise((resolve) =>
      socket.on("close", (code) => {
        this.closeCode = code;
        this.wake();
        resolve(code);
      }),
    );
  }

  static async connect(url: string, options: ClientOptions = {}): Promise<TestClient> {
    const socket = new WebSocket(url, options);
    const client = new TestClient(socket);
    await new Promise<void>((resolve, reject) => {
      socket.once("open", () => resolve());
      socket.once("error", reject);
    });
    return client;
  }

  send(frame: unknown): void {
    this.socket.send(typeof frame === "string" ? frame : JSON.stringify(frame));
  }

  /** The next frame not yet taken. */
  async next(timeoutMs = 5000): Promise<Frame> {
    const deadline = Date.now() + timeoutMs;
    while (this.cursor >= this.frames.length) {
      if (this.closeCode !== null) throw new Error(`connection closed (${this.closeCode}) while waiting for a frame`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no frame within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return this.frames[this.cursor++];
  }

  /** The next `count` frames. */
  async take(count: number, timeoutMs = 5000): Promise<Frame[]> {
    const out: Frame[] = [];
    const deadline = Date.now() + timeoutMs;
    while (out.length < count) out.push(await this.next(Math.max(1, deadline - Date.now())));
    return out;
  }

  /** Subscribe and wait for the confirmation (replayed events come before it). */
  async subscribe(sessionId: string, since?: string): Promise<Frame[]> {
    this.send({ type: "subscribe", session_id: sessionId, ...(since ? { since } : {}) });
    const before: Frame[] = [];
    while (true) {
      const frame = await this.next();
      if (frame.type === "subscribed" && frame.session_id === sessionId) return before;
      before.push(frame);
    }
  }

  /** Assert that no frame arrives for `ms`. */
  async expectSilence(ms: number): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, ms));
    if (this.cursor < this.frames.length) {
      throw new Error(`unexpected frame: ${JSON.stringify(this.frames[this.cursor])}`);
    }
  }

  close(): void {
    this.socket.close();
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }
}

/** Wait until `condition` holds, or fail after `timeoutMs`. */
export async function waitUntil(condition: () => boolean | Promise<boolean>, timeoutMs = 5000, what = "condition"): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Open a ws connection and report the HTTP status it was refused with (or 101 when accepted). */
export function upgradeStatus(url: string, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, { headers });
    socket.on("unexpected-response", (_req, res) => {
      resolve(res.statusCode ?? 0);
      res.resume();
      socket.terminate();
    });
    socket.on("open", () => {
      resolve(101);
      socket.close();
    });
    socket.on("error", (err) => {
      if (!String(err.message).includes("Unexpected server response")) reject(err);
    });
  });
}
