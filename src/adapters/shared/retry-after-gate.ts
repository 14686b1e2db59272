// A Retry-After the platform gave a streamed preview is remembered per destination, so the
// reply's delivery (sent by another worker path right after the turn) does not hit the platform
// again inside that window: it gets a RateLimitedError with the time left and is parked for it.
import { RateLimitWindows } from "../../bus/rate-limit-windows.js";
import { RateLimitedError } from "../../gateway/types.js";

/** Where an adapter gets its windows: one set per platform, possibly shared across processes. */
export interface RateLimitGates {
  windows(scope: string): RateLimitWindows;
}

export class RetryAfterGate {
  constructor(private readonly windows: RateLimitWindows = new RateLimitWindows()) {}

  /** Runs `request`; a RateLimitedError it throws holds `key` back until Retry-After. */
  async track<T>(key: string, request: () => Promise<T>): Promise<T> {
    try {
      return await request();
    } catch (error) {
      if (error instanceof RateLimitedError) this.windows.open(key, error.retryAfterMs);
      throw error;
    }
  }

  /** Throws RateLimitedError with the time left while `key` is held back. */
  check(key: string, what: string): void {
    const left = this.windows.msLeft(key);
    if (left > 0) throw new RateLimitedError(left, `${what} held back: the platform asked to retry after ${left} ms`);
  }
}
