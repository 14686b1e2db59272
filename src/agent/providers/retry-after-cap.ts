// Retry-After handling around the openai client. The client (6.x) honours Retry-After and
// retry-after-ms on 408/409/429/5xx but waits for any length the server names, with no cap and
// without watching the abort signal. A server asking for minutes (a spent quota) would hold a turn
// and its session lease that long, so longer waits are surfaced as an error instead.
import { retryAfterMsFrom } from "../../shared/retry-after.js";

export type FetchLike = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/**
 * Wraps fetch so that an error response asking to wait longer than `maxRetryAfterMs` carries
 * `x-should-retry: false`, which the client obeys: it fails at once instead of sleeping.
 */
export function capRetryAfter(inner: FetchLike, maxRetryAfterMs: number): FetchLike {
  return async (input, init) => {
    const response = await inner(input, init);
    if (response.ok || response.headers.has("x-should-retry")) return response;
    const wait = retryAfterMsFrom(response.headers);
    if (wait === undefined || wait <= maxRetryAfterMs) return response;
    const headers = new Headers(response.headers);
    headers.set("x-should-retry", "false");
    return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
  };
}
