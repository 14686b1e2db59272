// A Retry-After the platform gave a streamed preview is remembered per destination, so the
// reply's delivery (sent by another worker path right after the turn) does not hit the platform
// again inside that window: it gets a RateLimitedError with the time left and is parked for it.
import { RateLimitedError } from "../../gateway/types.js";

/** Destinations remembered at most; expired entries are dropped first. */
const MAX_ENTRIES = 10_000;

/** Where an adapter gets its gate: one per platform, possibly shared across processes. */
export interface RateLimitGates {
  gate(scope: string): RetryAfterGate;
}

/** Told when this gate closes for a destination (e.g. to tell other processes); epoch ms. */
export type GateClosed = (key: string, untilMs: number) => void;

export class RetryAfterGate {
  private readonly until = new Map<string, number>();

  constructor(
    private readonly now: () => number = Date.now,
    private readonly onClosed: GateClosed | null = null,
  ) {}

  /** Hold `key` back until `untilMs` (epoch ms), as another process's gate asked; never shortens a wait. */
  closeUntil(key: string, untilMs: number): void {
    if (untilMs <= this.now()) return;
    if (this.until.size >= MAX_ENTRIES) this.prune();
    this.until.set(key, Math.max(this.until.get(key) ?? 0, untilMs));
  }

  /** Runs `request`; a RateLimitedError it throws closes the gate for `key` until Retry-After. */
  async track<T>(key: string, request: () => Promise<T>): Promise<T> {
    try {
      return await request();
    } catch (error) {
      if (error instanceof RateLimitedError) this.close(key, error.retryAfterMs);
      throw error;
    }
  }

  /** Throws RateLimitedError with the time left while the gate for `key` is closed. */
  check(key: string, what: string): void {
    const until = this.until.get(key);
    if (until === undefined) return;
    const left = until - this.now();
    if (left <= 0) {
      this.until.delete(key);
      return;
    }
    throw new RateLimitedError(left, `${what} held back: the platform asked to retry after ${left} ms`);
  }

  private close(key: string, retryAfterMs: number): void {
    const untilMs = this.now() + retryAfterMs;
    this.closeUntil(key, untilMs);
    this.onClosed?.(key, untilMs);
  }

  private prune(): void {
    const now = this.now();
    for (const [key, until] of this.until) if (until <= now) this.until.delete(key);
    // Still full: forget the oldest entries (Map keeps insertion order).
    for (const key of this.until.keys()) {
      if (this.until.size < MAX_ENTRIES) break;
      this.until.delete(key);
    }
  }
}
