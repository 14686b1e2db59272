// Splits a long reply into messages a platform accepts, on line or word boundaries, keeping
// fenced code blocks intact across the split (closed at the end of one part, reopened in the next).

const FENCE = "```";
const CLOSE = `\n${FENCE}`;

/** Parts of at most `maxLength` UTF-16 units each (so also at most that many code points). */
export function splitMessage(text: string, maxLength: number): string[] {
  if (maxLength < 16) throw new Error("maxLength too small to split messages");
  if (text.length <= maxLength) return [text];
  const parts: string[] = [];
  let rest = text;
  let openFence: string | null = null;
  while (rest.length > 0) {
    // Reopen a code block the previous part had to close (unless its language tag is absurdly long).
    const prefix = openFence !== null && openFence.length < maxLength / 4 ? `${openFence}\n` : "";
    if (prefix.length + rest.length <= maxLength) {
      parts.push(prefix + rest);
      break;
    }
    const budget = maxLength - prefix.length - CLOSE.length;
    const cut = chooseCut(rest, budget);
    const body = prefix + rest.slice(0, cut).replace(/\s+$/u, "");
    rest = rest.slice(cut).replace(/^[ \t]*\n?/u, "");
    openFence = fenceOpenAfter(body);
    parts.push(openFence !== null ? body + CLOSE : body);
  }
  return parts.filter((part) => part.trim() !== "");
}

/** Where to end a part of at most `budget` units: a newline, else a space, else a hard cut. */
function chooseCut(text: string, budget: number): number {
  const window = text.slice(0, budget + 1);
  const half = Math.floor(budget / 2);
  const newline = window.lastIndexOf("\n");
  if (newline >= half) return newline;
  const space = lastWhitespace(window);
  if (space >= half) return space;
  if (newline > 0) return newline;
  if (space > 0) return space;
  // Hard cut; never between the halves of a surrogate pair.
  const code = text.charCodeAt(budget - 1);
  return code >= 0xd800 && code <= 0xdbff ? budget - 1 : budget;
}

function lastWhitespace(text: string): number {
  for (let i = text.length - 1; i > 0; i--) {
    if (/\s/u.test(text[i])) return i;
  }
  return -1;
}

/** The fence (with its language, e.g. ```ts) still open at the end of `text`, or null. */
function fenceOpenAfter(text: string): string | null {
  let open: string | null = null;
  for (const line of text.split("\n")) {
    const trimmed = line.trimStart();
    if (!trimmed.startsWith(FENCE)) continue;
    open = open === null ? FENCE + (/^```([\w+#.-]*)/.exec(trimmed)?.[1] ?? "") : null;
  }
  return open;
}
