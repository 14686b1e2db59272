// Keeps the turn lease alive while a turn runs. A refresh that returns false or throws means
// the lease may be gone: the turn is interrupted (hard). A miss that lands after stop() —
// after the loop finished or after release — is ignored, so it cannot poison the next turn.
import { pause } from "./interrupts.js";

export interface LeaseRefresherOptions {
  /** Read before each wait, so a changed interval applies from the next tick. */
  intervalSeconds: () => number;
  refresh: () => Promise<boolean>;
  /** Called at most once, on the first miss before stop(). */
  onLost: (reason: string) => void | Promise<void>;
  /** Longest stop() waits for an onLost call already running. */
  stopWaitMs?: number;
}

export class LeaseRefresher {
  private stopped = false;
  private lost = false;
  private readonly stopSignal = new AbortController();
  private running: Promise<void> | null = null;
  private inFlightLost: Promise<void> | null = null;

  constructor(private readonly options: LeaseRefresherOptions) {}

  /** True once a refresh missed while the turn was still running. */
  get leaseLost(): boolean {
    return this.lost;
  }

  start(): void {
    if (this.running) return;
    this.running = this.loop();
  }

  /**
   * Stops refreshing. Does not wait for a refresh call in flight (its answer is ignored), but does
   * wait for an interrupt already under way, so its state is settled before the turn clears it.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    // A reason: abort() without one builds a DOMException (with a stack) on every turn.
    this.stopSignal.abort("turn over");
    if (this.inFlightLost) {
      const cap = pause(this.options.stopWaitMs ?? 5_000);
      await Promise.race([this.inFlightLost, cap]);
    }
  }

  private async loop(): Promise<void> {
    while (!this.stopped && !this.lost) {
      await pause(Math.max(1, this.options.intervalSeconds() * 1000), this.stopSignal.signal);
      if (this.stopped) return;
      let reason: string | null = null;
      try {
        if (!(await this.options.refresh())) reason = "the session turn lease was taken over or expired";
      } catch (err) {
        reason = `the session turn lease could not be refreshed: ${err instanceof Error ? err.message : String(err)}`;
      }
      if (this.stopped) return; // a late answer: the turn is over
      if (reason !== null) {
        this.lost = true;
        // Called synchronously, so the interrupt lands before anything else is scheduled.
        let pending: void | Promise<void>;
        try {
          pending = this.options.onLost(reason);
        } catch {
          pending = undefined;
        }
        this.inFlightLost = Promise.resolve(pending).catch(() => {});
        return;
      }
    }
  }
}
