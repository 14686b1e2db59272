// Spaces streamed previews out per chat: Telegram allows about one message or edit per second in
// a chat, and several turns (forum topics) can stream into one chat at once.

/** Destinations remembered at most; the oldest are forgotten first. */
const MAX_ENTRIES = 10_000;

export class ChatPacer {
  private readonly next = new Map<string, number>();

  constructor(
    private readonly intervalMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Takes the chat's next slot: 0 when it is free now, else the milliseconds until it is. */
  claim(chat: string): number {
    const now = this.now();
    const free = this.next.get(chat) ?? 0;
    if (free > now) return free - now;
    this.next.delete(chat);
    this.next.set(chat, now + this.intervalMs);
    if (this.next.size > MAX_ENTRIES) this.next.delete(this.next.keys().next().value as string);
    return 0;
  }
}
