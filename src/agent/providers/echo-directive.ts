// The offline echo model's tool directive: `[[tool:<name> <json-args>]]` inside a user message
// asks for that tool call, so tool round trips run without a model server.

export interface DirectiveCall {
  name: string;
  /** The JSON arguments as written ("{}" when none were given). */
  arguments: string;
}

export interface ParsedDirectives {
  calls: DirectiveCall[];
  /** The message text with the directives taken out. */
  text: string;
}

const OPEN = "[[tool:";
const CLOSE = "]]";
const NAME = /^[A-Za-z0-9_.-]+/;

export function parseToolDirectives(message: string): ParsedDirectives {
  const calls: DirectiveCall[] = [];
  let text = "";
  let cursor = 0;
  while (true) {
    const start = message.indexOf(OPEN, cursor);
    if (start < 0) break;
    const nameMatch = NAME.exec(message.slice(start + OPEN.length));
    const end = nameMatch ? findEnd(message, start + OPEN.length + nameMatch[0].length) : undefined;
    if (!nameMatch || !end) {
      text += message.slice(cursor, start + OPEN.length);
      cursor = start + OPEN.length;
      continue;
    }
    calls.push({ name: nameMatch[0], arguments: end.args || "{}" });
    text += message.slice(cursor, start);
    cursor = end.next;
  }
  text += message.slice(cursor);
  return { calls, text: text.replace(/\s+/g, " ").trim() };
}

/**
 * Finds the `]]` closing a directive whose arguments start at `from`. JSON may itself hold `]]`
 * (nested arrays), so the first close after which the arguments parse as JSON wins; failing
 * that, the first close (the tool then receives the malformed arguments as written).
 */
function findEnd(message: string, from: number): { args: string; next: number } | undefined {
  let first: { args: string; next: number } | undefined;
  for (let close = message.indexOf(CLOSE, from); close >= 0; close = message.indexOf(CLOSE, close + 1)) {
    const raw = message.slice(from, close);
    if (raw !== "" && !/^\s/.test(raw)) return first; // the name must be followed by space or the close
    const candidate = { args: raw.trim(), next: close + CLOSE.length };
    first ??= candidate;
    if (candidate.args === "" || parsesAsJson(candidate.args)) return candidate;
  }
  return first;
}

function parsesAsJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}
