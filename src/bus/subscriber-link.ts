// A bus's pub/sub connection: the shared one the composition root gave it, or one it duplicates
// from its commands connection on first use (so a publish-only process opens none) and then owns.
// The bus's handlers stay attached while it lives; on release an owned connection is closed, a
// shared one only loses the bus's handlers and channels.
import type { Redis } from "ioredis";

export interface SubscriberHandlers {
  message: (channel: string, message: string) => void;
  /** The connection dropped: live messages stop until it is back. */
  close: () => void;
  /** The connection is (again) ready. */
  ready: () => void;
}

export class SubscriberLink {
  private connection: Redis | null = null;
  private readonly owned: boolean;

  constructor(
    private readonly commands: Redis,
    given: Redis | undefined,
    private readonly handlers: SubscriberHandlers,
  ) {
    this.owned = !given;
    if (given) this.attach(given);
  }

  /** The connection, created now when the bus owns it and had none yet. */
  get(): Redis {
    return this.connection ?? this.attach(this.commands.duplicate());
  }

  /** Detach the handlers; close an owned connection, or unsubscribe `channels` from a shared one. */
  async release(channels: string[]): Promise<void> {
    const connection = this.connection;
    if (!connection) return;
    connection.off("message", this.handlers.message);
    connection.off("close", this.handlers.close);
    connection.off("ready", this.handlers.ready);
    if (this.owned) connection.disconnect();
    else if (channels.length > 0) await connection.unsubscribe(...channels).catch(() => undefined);
  }

  private attach(connection: Redis): Redis {
    this.connection = connection;
    connection.on("message", this.handlers.message);
    connection.on("close", this.handlers.close);
    connection.on("ready", this.handlers.ready);
    return connection;
  }
}
