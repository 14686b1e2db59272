// The one Retry-After parser (model providers and platform adapters): seconds, HTTP dates and
// retry-after-ms, each rounded up to a whole millisecond and never negative.
import { describe, expect, it } from "vitest";
import { parseRetryAfter, retryAfterMsFrom, secondsToMs } from "../../src/shared/retry-after.js";

const NOW = Date.parse("2024-05-01T12:00:00Z");

describe("Retry-After", () => {
  it("reads seconds, rounding a fraction of a millisecond up", () => {
    expect(parseRetryAfter("3", NOW)).toBe(3000);
    expect(parseRetryAfter(" 1.5 ", NOW)).toBe(1500);
    expect(parseRetryAfter("0.0004", NOW)).toBe(1);
    expect(parseRetryAfter("1.0001", NOW)).toBe(1001);
    expect(parseRetryAfter("0", NOW)).toBe(0);
  });

  it("reads an HTTP date as the time left until it, 0 once it has passed", () => {
    expect(parseRetryAfter("Wed, 01 May 2024 12:00:07 GMT", NOW)).toBe(7000);
    expect(parseRetryAfter("Wed, 01 May 2024 11:59:00 GMT", NOW)).toBe(0);
  });

  it("never answers a negative wait, and null for nothing readable", () => {
    expect(parseRetryAfter("-5", NOW)).toBe(0);
    expect(parseRetryAfter(null, NOW)).toBeNull();
    expect(parseRetryAfter(undefined, NOW)).toBeNull();
    expect(parseRetryAfter("  ", NOW)).toBeNull();
    expect(parseRetryAfter("soon", NOW)).toBeNull();
  });

  it("prefers retry-after-ms, rounded up, and falls back to Retry-After", () => {
    expect(retryAfterMsFrom(new Headers({ "retry-after-ms": "10.2", "retry-after": "60" }), NOW)).toBe(11);
    expect(retryAfterMsFrom(new Headers({ "retry-after-ms": "bogus", "retry-after": "2.5" }), NOW)).toBe(2500);
    expect(retryAfterMsFrom(new Headers({ "retry-after": "Wed, 01 May 2024 12:01:00 GMT" }), NOW)).toBe(60_000);
    expect(retryAfterMsFrom(new Headers(), NOW)).toBeUndefined();
  });

  it("turns a body's seconds (Discord's retry_after) into whole milliseconds", () => {
    expect(secondsToMs(0.3455)).toBe(346);
    expect(secondsToMs("2")).toBe(2000);
    expect(secondsToMs(-1)).toBeNull();
    expect(secondsToMs("")).toBeNull();
    expect(secondsToMs(undefined)).toBeNull();
    expect(secondsToMs("x")).toBeNull();
  });
});
