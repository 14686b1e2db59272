// Retry-After windows a platform gave one process, shared with every gateway process: a 429 on a
// streamed preview in one worker also holds back the next post to that destination from any
// other. Each adapter's gate stays synchronous and local; a gate that closes announces it over
// Redis pub/sub, and every process applies the announcement to its own gate. Pub/sub is
// at-most-once: a lost announcement only means that process meets the 429 itself once.
import type { Redis } from "ioredis";
import type { Logger } from "pino";
import { z } from "zod";
import { RetryAfterGate } from "../adapters/shared/retry-after-gate.js";

export interface SharedRateLimitsOptions {
  redis: Redis;
  /** A pub/sub connection (shared with the other buses; not closed here). */
  subscriber: Redis;
  channel: string;
  logger?: Logger;
}

const Announcement = z.object({ scope: z.string(), key: z.string(), untilMs: z.number() });

export class SharedRateLimits {
  private readonly gates = new Map<string, RetryAfterGate>();

  private constructor(private readonly options: SharedRateLimitsOptions) {}

  static async start(options: SharedRateLimitsOptions): Promise<SharedRateLimits> {
    const shared = new SharedRateLimits(options);
    options.subscriber.on("message", shared.onMessage);
    await options.subscriber.subscribe(options.channel);
    return shared;
  }

  /** The gate of one platform (its keys are that platform's destinations). */
  gate(scope: string): RetryAfterGate {
    let gate = this.gates.get(scope);
    if (!gate) {
      gate = new RetryAfterGate(Date.now, (key, untilMs) => this.announce(scope, key, untilMs));
      this.gates.set(scope, gate);
    }
    return gate;
  }

  async close(): Promise<void> {
    this.options.subscriber.off("message", this.onMessage);
    await this.options.subscriber.unsubscribe(this.options.channel).catch(() => undefined);
  }

  private announce(scope: string, key: string, untilMs: number): void {
    this.options.redis.publish(this.options.channel, JSON.stringify({ scope, key, untilMs })).catch((err: Error) => {
      this.options.logger?.warn({ err: err.message }, "rate limits: could not tell the other processes");
    });
  }

  private readonly onMessage = (channel: string, message: string): void => {
    if (channel !== this.options.channel) return;
    let parsed: z.infer<typeof Announcement>;
    try {
      parsed = Announcement.parse(JSON.parse(message));
    } catch {
      this.options.logger?.warn("rate limits: unreadable announcement ignored");
      return;
    }
    // Our own announcements come back too; closeUntil never shortens a wait, so that is harmless.
    this.gate(parsed.scope).closeUntil(parsed.key, parsed.untilMs);
  };
}
