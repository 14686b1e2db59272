// What the fake model (children/fake-llm.ts) answers, shared with the loads that check replies:
// the echo model's `Echo: <last user text>`, lengthened to about a short real answer so that it
// streams as many chunks as a model's tokens would.

const FILLER =
  "This answer streams in small pieces the way a model sends its tokens, so every system under test " +
  "shows it while it grows and then in full";

/** The full reply to a message whose text is `userText`. */
export function fakeReply(userText: string): string {
  return `Echo: ${userText}. ${FILLER}`;
}

/** `text` cut into `count` pieces of nearly equal length (fewer for a shorter text). */
export function splitChunks(text: string, count: number): string[] {
  const n = Math.max(1, Math.min(count, text.length));
  const chunks: string[] = [];
  for (let i = 0; i < n; i++) chunks.push(text.slice(Math.floor((i * text.length) / n), Math.floor(((i + 1) * text.length) / n)));
  return chunks;
}

/** The fake model's pace: a turn of `turnMs`, the first token after `firstTokenShare` of it, `chunks` pieces over the rest. */
export interface ModelPace {
  turnMs: number;
  firstTokenShare: number;
  chunks: number;
}

export const DEFAULT_PACE: ModelPace = { turnMs: 2_000, firstTokenShare: 0.25, chunks: 40 };
