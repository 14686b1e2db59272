// Picks one request's turn out of its session's event feed: the deltas after the `turn.started`
// whose inbox_ids hold our inbox row, up to that turn's end. Events that arrive before we know
// our inbox id (the worker can start before accept() returns) are held and replayed on bind().
// Deltas are live-only frames that may be missed (pub/sub): each says where its text starts in the
// segment (`offset`); after a gap nothing more of the segment is streamed, and the end event's
// final text fills in the rest (remainderOf).
import type { GatewayEvent } from "../../gateway/types.js";

export type TurnEndKind = "completed" | "failed" | "interrupted";

export interface TurnEnd {
  kind: TurnEndKind;
  /** `turn.completed` (and sometimes `turn.interrupted`) carry the turn's final text. */
  finalResponse: string | null;
  error: string | null;
}

const END_KINDS: Record<string, TurnEndKind> = {
  "turn.completed": "completed",
  "turn.failed": "failed",
  "turn.interrupted": "interrupted",
};

function inboxIdsOf(event: GatewayEvent): number[] | null {
  const ids = event.data.inbox_ids;
  return Array.isArray(ids) ? ids.filter((id): id is number => typeof id === "number") : null;
}

function stringField(data: Record<string, unknown>, ...names: string[]): string | null {
  for (const name of names) {
    const value = data[name];
    if (typeof value === "string") return value;
  }
  return null;
}

export class TurnEventTracker {
  private inboxId: number | null = null;
  private held: GatewayEvent[] = [];
  private started = false;
  private ended: TurnEnd | null = null;
  // Text of the current model call: a tool call starts a new one, and the turn's final response
  // is the last call's text, so the remainder is computed against this segment only.
  private segment = "";
  /** A frame of this segment was missed: the rest comes from the final text. */
  private gap = false;
  private resolveEnd!: (end: TurnEnd) => void;
  /** Resolves when our turn ends (never, if its end is not seen). */
  readonly end: Promise<TurnEnd>;

  constructor(private readonly onDelta: (text: string) => void) {
    this.end = new Promise((resolve) => (this.resolveEnd = resolve));
  }

  /** The text streamed since the last tool call. */
  get currentSegment(): string {
    return this.segment;
  }

  offer(event: GatewayEvent): void {
    if (this.inboxId === null) this.held.push(event);
    else this.handle(event, this.inboxId);
  }

  bind(inboxId: number): void {
    this.inboxId = inboxId;
    const held = this.held;
    this.held = [];
    for (const event of held) this.handle(event, inboxId);
  }

  /** What to send after the streamed text so the client ends up with `finalResponse`. */
  remainderOf(finalResponse: string | null): string {
    if (!finalResponse || !finalResponse.startsWith(this.segment)) return "";
    return finalResponse.slice(this.segment.length);
  }

  private finish(end: TurnEnd): void {
    this.ended = end;
    this.resolveEnd(end);
  }

  private handle(event: GatewayEvent, inboxId: number): void {
    if (this.ended) return;
    const ids = inboxIdsOf(event);
    const ours = ids !== null && ids.includes(inboxId);
    // A message steered into a running turn follows that turn from the moment it joined.
    if ((event.kind === "turn.started" || event.kind === "turn.steered") && ours) {
      this.started = true;
      return;
    }
    if (event.kind === "command" && ours) {
      // A command (/help, /status...) is answered without a turn.
      this.finish({ kind: "completed", finalResponse: stringField(event.data, "reply"), error: null });
      return;
    }
    const endKind = END_KINDS[event.kind];
    if (endKind && ours) {
      this.finish({
        kind: endKind,
        finalResponse: stringField(event.data, "final_response"),
        error: stringField(event.data, "error", "reason", "message"),
      });
      return;
    }
    if (!this.started) return;
    if (event.kind === "tool.started" || event.kind === "tool.finished") {
      this.segment = "";
      this.gap = false;
      return;
    }
    // A delta that names its turn must name ours; one that does not belongs to the started turn.
    if (event.kind === "delta" && (ids === null || ours)) {
      const text = event.data.text;
      if (typeof text !== "string" || text === "" || this.gap) return;
      const offset = typeof event.data.offset === "number" ? event.data.offset : this.segment.length;
      if (offset > this.segment.length) {
        this.gap = true;
        return;
      }
      // Text already streamed (an overlapping frame) is not sent twice.
      const fresh = text.slice(this.segment.length - offset);
      if (fresh === "") return;
      this.segment += fresh;
      this.onDelta(fresh);
    }
  }
}
