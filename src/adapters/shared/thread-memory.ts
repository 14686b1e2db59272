// Which threads the bot takes part in, so that plain replies there are answered without a mention.
// The default keeps the most recently touched threads in memory (bounded); a deployment with
// several ingress processes, or one that must survive restarts, can pass its own ThreadMemory.

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
