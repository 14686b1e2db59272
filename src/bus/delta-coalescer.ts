// Streamed reply text on its way to pub/sub, coalesced per session: a model streams a word every
// few milliseconds, and one Redis PUBLISH per word is most of a turn's Redis work, for text that
// no reader can take in that fast. A session's pending text goes out as one frame when the
// frame interval has passed since its first piece, when the reply moves to a new segment (a new
// model call after a tool), or just before a stored event of the session (so the live order stays
// the stream order). The frame of a turn's end is dropped instead: the end event carries the
// whole final text, and a reply that ends within one interval costs no frame at all.

import { without } from "../shared/bench-without.js";

/**
 * At most one frame per session this often: about two display frames, so a reader sees the text
 * move as smoothly as word by word, while a model that streams words faster than that costs one
 * PUBLISH per interval instead of one per word.
 */
export const DELTA_FRAME_INTERVAL_MS = 30;

/** The kinds that end a turn: they carry the final text, so the pending frame is not needed. */
const TURN_END_KINDS: ReadonlySet<string> = new Set(["turn.completed", "turn.failed", "turn.interrupted"]);

interface PendingFrame {
  text: string;
  /** Where `text` starts in the reply (absent when the publisher gave no offsets). */
  offset: number | undefined;
  /** The other fields of the newest piece (turn_session_id, inbox_ids). */
  data: Record<string, unknown>;
  /** When the frame goes out (its first piece's time plus the interval). */
  dueAt: number;
}

export type SendFrame = (sessionId: string, data: Record<string, unknown>) => void;

export class DeltaCoalescer {
  /**
   * Every interval is the same, so insertion order is due order: one timer serves every session,
   * waking for the oldest frame, instead of a timer per frame.
   */
  private readonly pending = new Map<string, PendingFrame>();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly send: SendFrame,
    private readonly intervalMs: number = DELTA_FRAME_INTERVAL_MS,
  ) {}

  /** A piece of streamed text: `data.text`, and `data.offset` (where it starts in the reply). */
  add(sessionId: string, data: Record<string, unknown>): void {
    const text = typeof data.text === "string" ? data.text : "";
    if (text === "") return;
    if (without("delta-coalescing")) return this.send(sessionId, data);
    const offset = typeof data.offset === "number" ? data.offset : undefined;
    const frame = this.pending.get(sessionId);
    if (frame) {
      const follows = offset === undefined || frame.offset === undefined || offset === frame.offset + frame.text.length;
      if (follows) {
        frame.text += text;
        frame.data = data;
        return;
      }
      // A new segment of the reply (its offsets start again): the old one goes out first.
      this.flush(sessionId);
    }
    this.pending.set(sessionId, { text, offset, data, dueAt: Date.now() + this.intervalMs });
    this.timer ??= this.armFor(this.intervalMs);
  }

  /** Called just before a stored event of the session is published. */
  beforeStored(sessionId: string, kind: string): void {
    if (TURN_END_KINDS.has(kind)) this.drop(sessionId);
    else this.flush(sessionId);
  }

  /** Send the session's pending text now, if there is any. */
  flush(sessionId: string): void {
    const frame = this.pending.get(sessionId);
    if (!frame) return;
    this.drop(sessionId);
    const data: Record<string, unknown> = { ...frame.data, text: frame.text };
    if (frame.offset === undefined) delete data.offset;
    else data.offset = frame.offset;
    this.send(sessionId, data);
  }

  /** Forget every pending frame (the bus is closing). */
  clear(): void {
    this.pending.clear();
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private drop(sessionId: string): void {
    this.pending.delete(sessionId);
  }

  private armFor(ms: number): NodeJS.Timeout {
    const timer = setTimeout(() => this.sendDue(), ms);
    timer.unref();
    return timer;
  }

  /** Sends the frames that are due, oldest first, and waits for the next one. */
  private sendDue(): void {
    this.timer = null;
    const now = Date.now();
    for (const [sessionId, frame] of this.pending) {
      if (frame.dueAt > now) {
        this.timer = this.armFor(frame.dueAt - now);
        return;
      }
      this.flush(sessionId);
    }
  }
}
