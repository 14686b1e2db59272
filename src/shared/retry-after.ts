// How long a server asked us to wait, read from `Retry-After` (and the `retry-after-ms` some
// model servers send), in whole milliseconds: the one parser the model providers and the
// platform adapters use.
//
// Rounding rule: a wait is rounded UP to a whole millisecond (0.0004 s -> 1 ms, 1.5 s -> 1500 ms,
// `retry-after-ms: 10.2` -> 11 ms), because retrying a fraction of a millisecond too early meets
// the limit again while waiting that fraction longer costs nothing. A wait is never negative: an
// HTTP date in the past, or a negative number in a header, is 0 ms. Numbers are read strictly
// (`Number`, not `parseFloat`): "1.5s" is not a number, and is then tried as an HTTP date.

/** A number of seconds (a JSON number, or its text) as whole ms, rounded up; null unless a finite number >= 0. */
export function secondsToMs(value: unknown): number | null {
  const n = typeof value === "string" && value.trim() !== "" ? Number(value) : value;
  if (typeof n !== "number" || !Number.isFinite(n) || n < 0) return null;
  return Math.ceil(n * 1000);
}

/** A `Retry-After` value, seconds (integer or decimal) or an HTTP date, as ms; null when absent or unreadable. */
export function parseRetryAfter(value: string | null | undefined, now = Date.now()): number | null {
  const trimmed = value?.trim();
  if (!trimmed) return null;
  const seconds = Number(trimmed);
  if (Number.isFinite(seconds)) return Math.max(0, Math.ceil(seconds * 1000));
  const date = Date.parse(trimmed);
  return Number.isFinite(date) ? Math.max(0, Math.ceil(date - now)) : null;
}

/** The wait a response asks for, in ms: `retry-after-ms`, else `Retry-After`; undefined when it names none. */
export function retryAfterMsFrom(headers: Headers, now = Date.now()): number | undefined {
  const millis = headers.get("retry-after-ms")?.trim();
  if (millis) {
    const value = Number(millis);
    if (Number.isFinite(value) && value >= 0) return Math.ceil(value);
  }
  return parseRetryAfter(headers.get("retry-after"), now) ?? undefined;
}
