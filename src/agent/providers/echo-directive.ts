// The offline echo model's tool directive: `[[tool:<name> <json-args>]]` inside a user message
// asks for that tool call, so tool round trips run without a model server.
//
// Linear in the message, whatever it holds: a directive's arguments end before the next
// `[[tool:` (so no stretch of the message is scanned for two directives), the JSON value is
// scanned once with a bracket/string scanner and parsed once, and `]]` is looked up with a
// forward-only cursor.

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

/** What `\s` matches (and trim() removes), by char code: no regex run per character. */
function isSpace(code: number): boolean {
  return (
    (code >= 0x09 && code <= 0x0d) || code === 0x20 || code === 0xa0 || code === 0x1680 ||
    (code >= 0x2000 && code <= 0x200a) || code === 0x2028 || code === 0x2029 || code === 0x202f ||
    code === 0x205f || code === 0x3000 || code === 0xfeff
  );
}

/** A tool name's characters: letters, digits, `_`, `.` and `-`. */
function isNameChar(code: number): boolean {
  return (
    (code >= 0x61 && code <= 0x7a) || (code >= 0x41 && code <= 0x5a) || (code >= 0x30 && code <= 0x39) ||
    code === 0x5f || code === 0x2e || code === 0x2d
  );
}

export function parseToolDirectives(message: string): ParsedDirectives {
  const calls: DirectiveCall[] = [];
  const closes = new CloseFinder(message);
  let text = "";
  let cursor = 0;
  let start = message.indexOf(OPEN);
  while (start >= 0) {
    const nameStart = start + OPEN.length;
    const next = message.indexOf(OPEN, nameStart);
    const limit = next < 0 ? message.length : next;
    let nameEnd = nameStart;
    while (nameEnd < limit && isNameChar(message.charCodeAt(nameEnd))) nameEnd++;
    const name = message.slice(nameStart, nameEnd);
    const end = name ? findEnd(message, nameEnd, limit, closes) : undefined;
    if (name && end) {
      calls.push({ name, arguments: end.args || "{}" });
      text += message.slice(cursor, start);
      cursor = end.next;
    }
    start = next;
  }
  text += message.slice(cursor);
  return { calls, text: text.replace(/\s+/g, " ").trim() };
}

/** The first `]]` at or after a position; positions asked for only grow, so the search does too. */
class CloseFinder {
  private found = -2;

  constructor(private readonly message: string) {}

  at(from: number): number {
    if (this.found === -1 || this.found >= from) return this.found;
    this.found = this.message.indexOf(CLOSE, from);
    return this.found;
  }
}

/**
 * Finds the `]]` closing a directive whose arguments start at `from` and must end before
 * `limit`. JSON may itself hold `]]` (nested arrays, strings), so the close right after a JSON
 * value wins; failing that, the first close (the tool then receives the malformed arguments as
 * written). The name must be followed by space or the close.
 */
function findEnd(message: string, from: number, limit: number, closes: CloseFinder): { args: string; next: number } | undefined {
  const first = closes.at(from);
  if (first < 0 || first >= limit) return undefined;
  if (first !== from && !isSpace(message.charCodeAt(from))) return undefined;
  const valueStart = skipSpace(message, from, limit);
  const valueEnd = valueStart === first ? -1 : scanJsonValue(message, valueStart, limit);
  if (valueEnd > 0) {
    const close = skipSpace(message, valueEnd, limit);
    const args = message.slice(valueStart, valueEnd);
    if (message.startsWith(CLOSE, close) && close + CLOSE.length <= limit && parsesAsJson(args)) {
      return { args, next: close + CLOSE.length };
    }
  }
  return { args: message.slice(from, first).trim(), next: first + CLOSE.length };
}

function skipSpace(message: string, from: number, limit: number): number {
  let i = from;
  while (i < limit && isSpace(message.charCodeAt(i))) i++;
  return i;
}

/**
 * Where the JSON value starting at `from` ends (exclusive), judged by brackets and strings only;
 * -1 when it does not end before `limit`. JSON.parse then says whether it is valid.
 */
function scanJsonValue(message: string, from: number, limit: number): number {
  let depth = 0;
  let i = from;
  while (i < limit) {
    const ch = message[i];
    if (ch === '"') {
      i = skipString(message, i + 1, limit);
      if (i < 0) return -1;
      if (depth === 0) return i;
      continue;
    }
    if (ch === "[" || ch === "{") depth++;
    else if (ch === "]" || ch === "}") {
      if (depth === 0) return i === from ? -1 : i;
      depth--;
      if (depth === 0) return i + 1;
    } else if (depth === 0 && (isSpace(message.charCodeAt(i)) || ch === ",")) {
      // The end of a bare number or literal.
      return i === from ? -1 : i;
    }
    i++;
  }
  return depth === 0 && i > from ? i : -1;
}

/** Past the closing quote of a string whose body starts at `from`; -1 if it does not close. */
function skipString(message: string, from: number, limit: number): number {
  for (let i = from; i < limit; i++) {
    if (message[i] === "\\") i++;
    else if (message[i] === '"') return i + 1;
  }
  return -1;
}

function parsesAsJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}
