// What a WebSocket client shows of one turn's reply, built the way docs/clients.md tells clients to:
// each `delta` frame's text goes at its `offset` (text already shown is skipped; after a gap
// nothing more is shown), and the turn's end event completes the text from `final_response`.
import type { ServerFrame } from "./ws-client.js";

export interface StreamedReply {
  /** The text the delta frames alone gave, before the end event. */
  streamed: string;
  /** Whether a frame was missing (a later frame started past the text shown). */
  gap: boolean;
  /** The text shown once the end event arrived (null: no end event yet). */
  shown: string | null;
  /** The delta frames of the turn, in arrival order. */
  frames: ServerFrame[];
}

const isEnd = (kind: string | undefined): boolean => /^turn\.(completed|failed|interrupted)$/.test(kind ?? "");

/** The reply of the first turn among `events` (one session's event frames, in arrival order). */
export function streamedReply(events: ServerFrame[]): StreamedReply {
  let streamed = "";
  let gap = false;
  const frames: ServerFrame[] = [];
  for (const event of events) {
    if (event.kind === "delta") {
      frames.push(event);
      const text = String(event.data?.text ?? "");
      const offset = typeof event.data?.offset === "number" ? event.data.offset : streamed.length;
      if (gap) continue;
      if (offset > streamed.length) {
        gap = true;
        continue;
      }
      streamed += text.slice(streamed.length - offset);
    } else if (isEnd(event.kind)) {
      const final = String(event.data?.final_response ?? "");
      const shown = final.startsWith(streamed) ? final : streamed;
      return { streamed, gap, shown, frames };
    }
  }
  return { streamed, gap, shown: null, frames };
}
