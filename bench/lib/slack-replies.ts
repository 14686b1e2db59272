// Which bot message answered which mention, from what the fake Slack Web API was asked to show.
// The first chat.postMessage in a thread after a mention is that mention's first reply (mentions
// of one thread are answered in order); a bot message showing exactly the expected echo is its
// final reply. An expected text shown by two different bot messages is a duplicate answer.
import type { BotMessage, SlackApiListener } from "./fake-slack-api.js";
import { msBetween } from "./stats.js";

export interface TrackedMention {
  eventId: string;
  threadKey: string;
  expectedReply: string;
  sentNs: bigint;
  ackNs: bigint | null;
  /** HTTP status of the ack; -1 for a network error. */
  status: number | null;
  /** The network error's code, when there was one. */
  error: string | null;
  firstPostNs: bigint | null;
  finalNs: bigint | null;
  /** Bot messages (channel:ts) that showed the expected reply. */
  answeredBy: Set<string>;
}

export class ReplyTracker implements SlackApiListener {
  private readonly byReply = new Map<string, TrackedMention>();
  private readonly awaitingFirstPost = new Map<string, TrackedMention[]>();
  private readonly waiters = new Map<TrackedMention, () => void>();
  /** Bot posts in a thread with no mention waiting for one (repeats, or replies to nothing sent). */
  unexpectedPosts = 0;

  track(mention: { eventId: string; channel: string; threadTs: string; expectedReply: string }, sentNs: bigint): TrackedMention {
    const tracked: TrackedMention = {
      eventId: mention.eventId,
      threadKey: `${mention.channel}:${mention.threadTs}`,
      expectedReply: mention.expectedReply,
      sentNs,
      ackNs: null,
      status: null,
      error: null,
      firstPostNs: null,
      finalNs: null,
      answeredBy: new Set(),
    };
    this.byReply.set(tracked.expectedReply, tracked);
    let queue = this.awaitingFirstPost.get(tracked.threadKey);
    if (!queue) this.awaitingFirstPost.set(tracked.threadKey, (queue = []));
    queue.push(tracked);
    return tracked;
  }

  posted(message: BotMessage, atNs: bigint): void {
    const threadKey = `${message.channel}:${message.threadTs ?? message.ts}`;
    const queue = this.awaitingFirstPost.get(threadKey);
    const first = queue?.shift();
    if (first) first.firstPostNs = atNs;
    else this.unexpectedPosts += 1;
    if (queue?.length === 0) this.awaitingFirstPost.delete(threadKey);
    this.shown(message, threadKey, atNs);
  }

  edited(message: BotMessage, atNs: bigint): void {
    this.shown(message, `${message.channel}:${message.threadTs ?? message.ts}`, atNs);
  }

  /** Resolves true once the mention's final reply is shown, false after `timeoutMs`. */
  waitFinal(mention: TrackedMention, timeoutMs: number): Promise<boolean> {
    if (mention.finalNs !== null) return Promise.resolve(true);
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => {
        this.waiters.delete(mention);
        resolve(false);
      }, timeoutMs);
      this.waiters.set(mention, () => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  private shown(message: BotMessage, threadKey: string, atNs: bigint): void {
    const mention = this.byReply.get(message.text);
    if (!mention || mention.threadKey !== threadKey) return;
    mention.answeredBy.add(`${message.channel}:${message.ts}`);
    if (mention.finalNs !== null) return;
    mention.finalNs = atNs;
    const waiter = this.waiters.get(mention);
    this.waiters.delete(mention);
    waiter?.();
  }
}

export interface ReplySummary {
  sent: number;
  /** Acks other than 200 (network errors included). */
  refused: number;
  /** Those acks by status ("network error" for none). */
  refusedBy: Record<string, number>;
  ackMs: number[];
  firstReplyMs: number[];
  finalReplyMs: number[];
  /** Accepted mentions never answered with their echo. */
  lost: number;
  /** Extra bot messages that showed an echo already shown by another. */
  duplicates: number;
}

export function summarizeReplies(mentions: readonly TrackedMention[]): ReplySummary {
  const summary: ReplySummary = { sent: mentions.length, refused: 0, refusedBy: {}, ackMs: [], firstReplyMs: [], finalReplyMs: [], lost: 0, duplicates: 0 };
  for (const m of mentions) {
    if (m.ackNs !== null) summary.ackMs.push(msBetween(m.sentNs, m.ackNs));
    if (m.status !== 200) {
      summary.refused += 1;
      const status = m.status === -1 || m.status === null ? `network error ${m.error ?? ""}`.trim() : String(m.status);
      summary.refusedBy[status] = (summary.refusedBy[status] ?? 0) + 1;
      continue;
    }
    if (m.firstPostNs !== null) summary.firstReplyMs.push(msBetween(m.sentNs, m.firstPostNs));
    if (m.finalNs !== null) summary.finalReplyMs.push(msBetween(m.sentNs, m.finalNs));
    else summary.lost += 1;
    summary.duplicates += Math.max(0, m.answeredBy.size - 1);
  }
  return summary;
}
