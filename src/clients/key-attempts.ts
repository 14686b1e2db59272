// Wrong API keys, counted per client address: after `maxFailures` within `windowMs` the address
// is refused (429 with Retry-After) until the oldest of those failures is older than the window.
// Kept in this process's memory: each gateway process counts for itself.

export interface KeyAttemptLimits {
  /** Wrong keys an address may send within the window. Default 10. */
  maxFailures: number;
  /** Default 60 s. */
  windowMs: number;
  /** Addresses remembered at once; the least recently failing are forgotten first. Default 10,000. */
  maxAddresses: number;
}

export const DEFAULT_KEY_ATTEMPT_LIMITS: KeyAttemptLimits = { maxFailures: 10, windowMs: 60_000, maxAddresses: 10_000 };

export class KeyAttempts {
  /** Failure times per address, oldest first; Map order is least recently failing first. */
  private readonly failures = new Map<string, number[]>();

  constructor(
    private readonly limits: KeyAttemptLimits = DEFAULT_KEY_ATTEMPT_LIMITS,
    private readonly now: () => number = Date.now,
  ) {}

  /** Seconds until `address` may try a key again; 0 when it may now. */
  retryAfterSeconds(address: string): number {
    const times = this.recent(address);
    if (times.length < this.limits.maxFailures) return 0;
    const freeAt = times[times.length - this.limits.maxFailures] + this.limits.windowMs;
    return Math.max(1, Math.ceil((freeAt - this.now()) / 1000));
  }

  recordFailure(address: string): void {
    const times = this.recent(address);
    times.push(this.now());
    // Only the last maxFailures matter for the decision.
    if (times.length > this.limits.maxFailures) times.splice(0, times.length - this.limits.maxFailures);
    this.failures.delete(address);
    this.failures.set(address, times);
    if (this.failures.size > this.limits.maxAddresses) {
      const oldest = this.failures.keys().next().value;
      if (oldest !== undefined) this.failures.delete(oldest);
    }
  }

  private recent(address: string): number[] {
    const times = this.failures.get(address);
    if (!times) return [];
    const since = this.now() - this.limits.windowMs;
    while (times.length > 0 && times[0] <= since) times.shift();
    if (times.length === 0) this.failures.delete(address);
    return times;
  }
}
