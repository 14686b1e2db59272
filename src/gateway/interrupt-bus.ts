// Interrupt requests across processes over Redis pub/sub: every process hears every request and
// the one running that session's turn acts on it.
//
// Pub/sub is at-most-once: a request published while a process's subscriber connection is down
// does not reach that process (ioredis resubscribes on reconnect; nothing is replayed). A turn
// that has not started yet is not interrupted by a request published before it started.
import type { Redis } from "ioredis";
import type { Logger } from "pino";
import { z } from "zod";
import type { InterruptPublisher, InterruptRequest } from "./bus-types.js";

export interface InterruptBusOptions {
  /** Commands connection (PUBLISH). Not closed by the bus. */
  redis: Redis;
  /** Pub/sub connection; when omitted, created by `redis.duplicate()` and closed on close(). */
  subscriber?: Redis;
  prefix: string;
  logger?: Logger;
}

export type InterruptListener = (request: InterruptRequest) => void;

const InterruptMessage = z.object({
  sessionId: z.string().min(1),
  text: z.string().optional(),
  hard: z.boolean().optional(),
  beforeInboxId: z.number().int().optional(),
});

export class InterruptBus implements InterruptPublisher {
  private readonly redis: Redis;
  /** Created on first onInterrupt() when not given: a publish-only process opens no extra connection. */
  private subscriberConnection: Redis | null = null;
  private readonly ownsSubscriber: boolean;
  private readonly channel: string;
  private readonly logger: Logger | undefined;
  private readonly listeners = new Set<InterruptListener>();
  private subscribed: Promise<void> | null = null;
  private closed = false;

  constructor(options: InterruptBusOptions) {
    this.redis = options.redis;
    this.ownsSubscriber = !options.subscriber;
    this.channel = `${options.prefix}:interrupts`;
    this.logger = options.logger;
    if (options.subscriber) this.attachSubscriber(options.subscriber);
  }

  private get subscriber(): Redis {
    return this.subscriberConnection ?? this.attachSubscriber(this.redis.duplicate());
  }

  private attachSubscriber(connection: Redis): Redis {
    this.subscriberConnection = connection;
    connection.on("message", this.onMessage);
    return connection;
  }

  /** Tell every process to interrupt the session's running turn. */
  async publish(request: InterruptRequest): Promise<void> {
    const message: InterruptRequest = { sessionId: request.sessionId };
    if (request.text !== undefined) message.text = request.text;
    if (request.hard !== undefined) message.hard = request.hard;
    if (request.beforeInboxId !== undefined) message.beforeInboxId = request.beforeInboxId;
    await this.redis.publish(this.channel, JSON.stringify(message));
  }

  /** Hear every interrupt request; resolves once this process is subscribed. */
  async onInterrupt(listener: InterruptListener): Promise<() => void> {
    if (this.closed) throw new Error("interrupt bus is closed");
    this.listeners.add(listener);
    this.subscribed ??= this.subscriber.subscribe(this.channel).then(() => undefined);
    try {
      await this.subscribed;
    } catch (err) {
      this.subscribed = null;
      this.listeners.delete(listener);
      throw err;
    }
    return () => {
      this.listeners.delete(listener);
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.listeners.clear();
    const connection = this.subscriberConnection;
    if (!connection) return;
    connection.off("message", this.onMessage);
    if (this.ownsSubscriber) connection.disconnect();
    else if (this.subscribed) await connection.unsubscribe(this.channel).catch(() => undefined);
  }

  private readonly onMessage = (channel: string, message: string): void => {
    if (channel !== this.channel) return;
    let parsed: InterruptRequest;
    try {
      parsed = InterruptMessage.parse(JSON.parse(message));
    } catch {
      this.logger?.warn("interrupt bus: unreadable message ignored");
      return;
    }
    for (const listener of this.listeners) {
      try {
        listener(parsed);
      } catch (err) {
        this.logger?.error({ err, sessionId: parsed.sessionId }, "interrupt listener threw");
      }
    }
  };
}
