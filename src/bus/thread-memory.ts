// Which chat threads the bot takes part in, shared by every gateway process and kept across
// restarts: loaded from the sessions' routing keys at start-up, and each newly remembered thread
// is announced to the other processes over Redis pub/sub. Lookups stay synchronous (a set in
// memory), as the adapters need them. A single process without Redis uses InMemoryThreadMemory.
import type { Redis } from "ioredis";
import type { Logger } from "pino";
import type { SessionStore } from "../state/types.js";
import { PubSubChannel } from "./pubsub-channel.js";

/** Which threads the bot takes part in, so plain replies there are answered without a mention. */
export interface ThreadMemory {
  has(threadKey: string): boolean;
  remember(threadKey: string): void;
}

export class InMemoryThreadMemory implements ThreadMemory {
  private readonly keys = new Map<string, true>();

  constructor(private readonly capacity = 10_000) {}

  has(threadKey: string): boolean {
    return this.keys.has(threadKey);
  }

  remember(threadKey: string): void {
    // Re-insert so Map order is least-recently-touched first.
    this.keys.delete(threadKey);
    this.keys.set(threadKey, true);
    while (this.keys.size > this.capacity) {
      const oldest = this.keys.keys().next();
      if (oldest.done) break;
      this.keys.delete(oldest.value);
    }
  }

  get size(): number {
    return this.keys.size;
  }
}

export interface SharedThreadMemoryOptions {
  store: SessionStore;
  redis: Redis;
  /** A pub/sub connection (shared with the other buses; not closed here). */
  subscriber: Redis;
  /** `RedisKeys.threadsChannel`. */
  channel: string;
  /** Session-key prefixes to load, and how a session key maps to a thread key. */
  prefixes: readonly string[];
  threadKeyOf: (sessionKey: string) => string | null;
  logger?: Logger;
  capacity?: number;
}

export class SharedThreadMemory implements ThreadMemory {
  private readonly memory: InMemoryThreadMemory;
  private readonly channel: PubSubChannel;

  private constructor(private readonly options: SharedThreadMemoryOptions) {
    this.memory = new InMemoryThreadMemory(options.capacity ?? 100_000);
    this.channel = new PubSubChannel({
      redis: options.redis,
      subscriber: options.subscriber,
      name: options.channel,
      onMessage: (threadKey) => this.memory.remember(threadKey),
    });
  }

  /** Load the known threads, then follow the other processes' announcements. */
  static async start(options: SharedThreadMemoryOptions): Promise<SharedThreadMemory> {
    const shared = new SharedThreadMemory(options);
    await shared.channel.listen();
    for (const prefix of options.prefixes) {
      for (const sessionKey of await options.store.sessionKeysWithPrefix(prefix, options.capacity ?? 100_000)) {
        const key = options.threadKeyOf(sessionKey);
        if (key) shared.memory.remember(key);
      }
    }
    return shared;
  }

  has(threadKey: string): boolean {
    return this.memory.has(threadKey);
  }

  remember(threadKey: string): void {
    const known = this.memory.has(threadKey);
    this.memory.remember(threadKey);
    if (known) return;
    this.channel.publish(threadKey).catch((err: Error) => {
      this.options.logger?.warn({ err: err.message }, "thread memory: could not tell the other processes");
    });
  }

  close(): Promise<void> {
    return this.channel.close();
  }
}
