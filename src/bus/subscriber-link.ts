// A pub/sub connection as one user of it sees it: the shared one the composition root gave it, or
// one it duplicates from its commands connection on first use (so a publish-only process opens
// none) and then owns. The user's handlers stay attached while it lives; on release an owned
// connection is closed, a shared one only loses the user's handlers, channels and patterns.
import type { Redis } from "ioredis";

export interface SubscriberHandlers {
  /** A message on a subscribed channel. */
  message?: (channel: string, message: string) => void;
  /** A message on a channel matched by a subscribed pattern. */
  pmessage?: (pattern: string, channel: string, message: string) => void;
  /** The connection dropped: live messages stop until it is back. */
  close?: () => void;
  /** The connection is (again) ready. */
  ready?: () => void;
}

const EVENTS = ["message", "pmessage", "close", "ready"] as const;

export class SubscriberLink {
  private connection: Redis | null = null;
  private readonly owned: boolean;

  constructor(
    private readonly commands: Redis,
    given: Redis | null | undefined,
    private readonly handlers: SubscriberHandlers,
  ) {
    this.owned = !given;
    if (given) this.attach(given);
  }

  /** The connection, created now when the user owns it and had none yet. */
  get(): Redis {
    return this.connection ?? this.attach(this.commands.duplicate());
  }

  /** Detach the handlers; close an owned connection, or unsubscribe `channels` and `patterns` from a shared one. */
  async release(channels: string[], patterns: string[] = []): Promise<void> {
    const connection = this.connection;
    if (!connection) return;
    for (const event of EVENTS) {
      const handler = this.handlers[event];
      if (handler) connection.off(event, handler);
    }
    if (this.owned) {
      connection.disconnect();
      return;
    }
    if (channels.length > 0) await connection.unsubscribe(...channels).catch(() => undefined);
    if (patterns.length > 0) await connection.punsubscribe(...patterns).catch(() => undefined);
  }

  private attach(connection: Redis): Redis {
    this.connection = connection;
    for (const event of EVENTS) {
      const handler = this.handlers[event];
      if (handler) connection.on(event, handler);
    }
    return connection;
  }
}
