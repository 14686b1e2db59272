// Every Redis key and pub/sub channel name of a deployment, built in one place from its prefix
// (SWITCHBOARD_QUEUE_PREFIX), so that several gateways can share one Redis. BullMQ names its own
// keys under the same prefix (`<prefix>:turns:...`, `<prefix>:deliveries:...`).

export class RedisKeys {
  constructor(readonly prefix: string) {}

  /**
   * A usage-limit counter or notice mark: `what` (msg, tok, notice-msg, notice-tok), the scope
   * (user, conversation) and its id, and the time window (a minute or a UTC day number).
   */
  usageLimit(what: string, scope: string, id: string, window: number): string {
    return `${this.prefix}:limits:${what}:${scope}:${window}:${id}`;
  }

  /** A session's event stream (its stream ids are the event ids). */
  eventStream(sessionId: string): string {
    return `${this.prefix}:events:${sessionId}`;
  }

  /** The channel a session's events are published on live. */
  eventChannel(sessionId: string): string {
    return `${this.prefix}:events:live:${sessionId}`;
  }

  /** The channel of interrupt requests (every process hears all of them). */
  get interruptChannel(): string {
    return `${this.prefix}:interrupts`;
  }

  /** The short stream that replays interrupt requests to a subscriber that was away. */
  get interruptLog(): string {
    return `${this.interruptChannel}:log`;
  }

  /** The family of lease-release channels, one member per conversation (see `familyMember`). */
  get leaseReleased(): string {
    return `${this.prefix}:lease-released`;
  }

  /** Threads the bot has joined, announced to the other processes. */
  get threadsChannel(): string {
    return `${this.prefix}:threads`;
  }

  /** The processes that run turn workers, each with the time it last said so (a sorted set). */
  get turnWorkers(): string {
    return `${this.prefix}:turn-workers`;
  }

  /** Retry-After windows, announced to the other processes. */
  get rateLimitsChannel(): string {
    return `${this.prefix}:rate-limits`;
  }
}

/** One channel of a family: `<family>:<member>`. */
export function familyMember(family: string, member: string): string {
  return `${family}:${member}`;
}

/** The PSUBSCRIBE pattern for every member of a family, and nothing else (glob characters escaped). */
export function familyPattern(family: string): string {
  return `${family.replace(/[*?[\]\\]/g, (char) => `\\${char}`)}:*`;
}
