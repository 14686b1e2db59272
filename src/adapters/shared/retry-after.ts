// Parsing of rate-limit hints into milliseconds.

/** `Retry-After` as seconds (integer or decimal) or an HTTP date; null when absent or unreadable. */
export function parseRetryAfterHeader(value: string | null | undefined, now = Date.now()): number | null {
  if (value === null || value === undefined) return null;
  const trimmed = value.trim();
  if (trimmed === "") return null;
  const seconds = Number(trimmed);
  if (Number.isFinite(seconds)) return Math.max(0, Math.ceil(seconds * 1000));
  const date = Date.parse(trimmed);
  if (Number.isFinite(date)) return Math.max(0, date - now);
  return null;
}

/** A seconds value (number, possibly fractional) as whole milliseconds; null when not a number. */
export function secondsToMs(value: unknown): number | null {
  const n = typeof value === "string" ? Number(value) : value;
  if (typeof n !== "number" || !Number.isFinite(n) || n < 0) return null;
  return Math.ceil(n * 1000);
}
