// The listeners of one kind of news (a lease release, an interrupt request): each is called in
// turn, and one that throws is reported without keeping the news from the others.

export class Listeners<T> {
  private readonly set = new Set<(news: T) => void>();

  constructor(private readonly onThrow: (err: unknown, news: T) => void) {}

  /** Adds a listener; the returned function removes it. */
  add(listener: (news: T) => void): () => void {
    this.set.add(listener);
    return () => {
      this.set.delete(listener);
    };
  }

  clear(): void {
    this.set.clear();
  }

  emit(news: T): void {
    for (const listener of [...this.set]) {
      try {
        listener(news);
      } catch (err) {
        this.onThrow(err, news);
      }
    }
  }
}
