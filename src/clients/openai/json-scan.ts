// A linear pass over a JSON text before it is parsed: how deep its arrays and objects nest, and
// how many characters lie outside data-URL strings. It checks nothing else (JSON.parse does), so
// a body that would take the parser seconds (millions of nested brackets) is refused first.

export interface JsonScan {
  /** Characters other than the contents of strings that begin with `data:`. */
  textChars: number;
  /** False when the nesting went past `maxDepth`; the scan stops there. */
  depthOk: boolean;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPENERS = new Set([0x5b, 0x7b]); // [ {
const CLOSERS = new Set([0x5d, 0x7d]); // ] }

export function scanJson(text: string, maxDepth: number): JsonScan {
  let depth = 0;
  let dataChars = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const end = closingQuote(text, i + 1);
      if (text.startsWith("data:", i + 1)) dataChars += end - i - 1;
      i = end;
    } else if (OPENERS.has(c)) {
      if (++depth > maxDepth) return { textChars: text.length - dataChars, depthOk: false };
    } else if (CLOSERS.has(c)) {
      depth--;
    }
  }
  return { textChars: text.length - dataChars, depthOk: true };
}

/** The index of the quote that ends the string starting at `from`, or the text's end. */
function closingQuote(text: string, from: number): number {
  let at = from;
  for (;;) {
    const quote = text.indexOf('"', at);
    if (quote === -1) return text.length;
    let backslashes = 0;
    while (text.charCodeAt(quote - 1 - backslashes) === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return quote;
    at = quote + 1;
  }
}
