// Which chat threads the bot takes part in, shared by every gateway process and kept across
// restarts: loaded from the sessions' routing keys at start-up, and each newly remembered thread
// is announced to the other processes over Redis pub/sub. Lookups stay synchronous (a set in
// memory), as the adapters need them. A single process without Redis uses InMemoryThreadMemory.
//
// The threads first remembered in one pass of the event loop go out as one message, a JSON array
// of their keys: 200 conversations starting at once are one PUBLISH, and every listening thread
// of every process handles one message instead of 200. A message that is not an array is one key
// (as a process of an earlier version announces it).
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
  /** Remembered in this pass and not announced yet: sent together at its end. */
  private unannounced: string[] = [];

  private constructor(private readonly options: SharedThreadMemoryOptions) {
    this.memory = new InMemoryThreadMemory(options.capacity ?? 100_000);
    this.channel = new PubSubChannel({
      redis: options.redis,
      subscriber: options.subscriber,
      name: options.channel,
      onMessage: (message) => {
        for (const threadKey of threadKeysIn(message)) this.memory.remember(threadKey);
      },
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
    if (this.unannounced.push(threadKey) === 1) setImmediate(() => this.announce());
  }

  close(): Promise<void> {
    this.announce();
    return this.channel.close();
  }

  private announce(): void {
    if (this.unannounced.length === 0) return;
    const threadKeys = this.unannounced;
    this.unannounced = [];
    this.channel.publish(JSON.stringify(threadKeys)).catch((err: Error) => {
      this.options.logger?.warn({ err: err.message }, "thread memory: could not tell the other processes");
    });
  }
}

/** The thread keys of an announcement: a JSON array of them, or (from an earlier version) one key. */
export function threadKeysIn(message: string): string[] {
  if (!message.startsWith("[")) return [message];
  try {
    const parsed: unknown = JSON.parse(message);
    if (Array.isArray(parsed)) return parsed.filter((key): key is string => typeof key === "string");
  } catch {
    // Not an array after all: taken as one key below.
  }
  return [message];
}
