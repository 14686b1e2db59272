// A progress bar on stderr for the long steps. On a terminal it redraws one line; otherwise it
// prints a line at each quarter, so logs of CI runs stay short.

const WIDTH = 30;
const REDRAW_MS = 100;

export class Progress {
  private done = 0;
  private lastDraw = 0;
  private lastQuarter = -1;
  private readonly started = performance.now();
  private finished = false;

  constructor(
    private readonly label: string,
    private readonly total: number,
    private readonly enabled = true,
    private readonly stream: NodeJS.WriteStream = process.stderr,
  ) {
    this.draw(true);
  }

  tick(count = 1): void {
    this.done = Math.min(this.total, this.done + count);
    this.draw(this.done === this.total);
  }

  /** Set the absolute count (for steps that report their own progress). */
  set(count: number): void {
    this.done = Math.min(this.total, Math.max(0, count));
    this.draw(this.done === this.total);
  }

  finish(): void {
    if (this.finished) return;
    this.done = this.total;
    this.draw(true);
    this.finished = true;
    if (this.enabled && this.stream.isTTY) this.stream.write("\n");
  }

  private draw(force: boolean): void {
    if (!this.enabled || this.finished) return;
    const now = performance.now();
    const fraction = this.total > 0 ? this.done / this.total : 1;
    if (!this.stream.isTTY) {
      const quarter = Math.floor(fraction * 4);
      if (quarter === this.lastQuarter) return;
      this.lastQuarter = quarter;
      this.stream.write(`  ${this.label}: ${Math.round(fraction * 100)}% (${this.done}/${this.total})\n`);
      return;
    }
    if (!force && now - this.lastDraw < REDRAW_MS) return;
    this.lastDraw = now;
    const filled = Math.round(fraction * WIDTH);
    const seconds = ((now - this.started) / 1000).toFixed(1);
    const bar = `${"#".repeat(filled)}${"-".repeat(WIDTH - filled)}`;
    this.stream.write(`\r  ${this.label} [${bar}] ${this.done}/${this.total} ${seconds}s `);
  }
}
