// A pass over durable state that runs on a timer and on demand: calls made while a pass is in
// flight share it, so a timer tick and a "Redis is back" event never run two passes at once.
export class PeriodicPass {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<number> | null = null;

  constructor(private readonly pass: () => Promise<number>) {}

  start(intervalMs: number): void {
    this.timer = setInterval(() => void this.runOnce(), intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** One pass; concurrent calls share the pass in flight. Returns what the pass counted. */
  runOnce(): Promise<number> {
    if (!this.running) {
      this.running = this.pass().finally(() => {
        this.running = null;
      });
    }
    return this.running;
  }
}
