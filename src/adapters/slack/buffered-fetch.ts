// The `fetch` Slack's WebClient sends with (its documented `fetch` option), backed by undici's
// `request` over a keep-alive pool. A Web API call is a small form request with a small JSON
// answer, read whole; the WHATWG fetch builds streams, an abort controller and a Response around
// each one, work that under load takes a large share of the workers' CPU for nothing read. A
// file upload's FormData body goes through the global fetch unchanged.
//
// The time limit of a call is the pool's (undici's headers, body and connect timeouts, on its own
// coarse timers), not an AbortSignal.timeout per call: that costs a timer, an event target and
// its listeners for every message sent.
import type { FetchFunction } from "@slack/web-api";
import { request, type Dispatcher } from "undici";
import { boundedPool } from "../shared/bounded-pool.js";
import { headersFromReceived } from "../../shared/received-headers.js";

// The SDK exports the function's type only; its parts are read off it.
type FetchRequestInit = NonNullable<Parameters<FetchFunction>[1]>;
type FetchResponse = Awaited<ReturnType<FetchFunction>>;
type FetchHeaders = FetchResponse["headers"];

/** Keep-alive connections per origin: enough for the workers' concurrent sends. */
const CONNECTIONS_PER_ORIGIN = 32;

/** How long a Web API call may wait to connect, for its answer's headers, or between its body's parts. */
export const SLACK_CALL_TIMEOUT_MS = 15_000;

/** What the WebClient reads of a response, the body already in hand. */
class BufferedResponse implements FetchResponse {
  readonly ok: boolean;

  constructor(
    readonly url: string,
    readonly status: number,
    readonly statusText: string,
    readonly headers: FetchHeaders,
    private readonly bytes: Buffer,
  ) {
    this.ok = status >= 200 && status < 300;
  }

  async text(): Promise<string> {
    return this.bytes.toString("utf8");
  }

  async json(): Promise<unknown> {
    return JSON.parse(this.bytes.toString("utf8"));
  }

  async arrayBuffer(): Promise<ArrayBuffer> {
    return new Uint8Array(this.bytes).buffer;
  }
}

/** A `fetch` for one WebClient, over a keep-alive pool of its own whose timeouts bound every call. */
export function createSlackFetch(timeoutMs: number = SLACK_CALL_TIMEOUT_MS): FetchFunction {
  const pool = boundedPool(CONNECTIONS_PER_ORIGIN, timeoutMs);
  return async (url: string | URL, init: FetchRequestInit = {}): Promise<FetchResponse> => {
    if (typeof init.body !== "string" && init.body !== undefined) return fetch(url, { ...init, signal: init.signal ?? AbortSignal.timeout(timeoutMs) });
    const href = typeof url === "string" ? url : url.href;
    const answer = await request(href, {
      method: (init.method ?? "GET").toUpperCase() as Dispatcher.HttpMethod,
      headers: init.headers,
      body: init.body,
      signal: init.signal,
      dispatcher: pool,
    });
    const bytes = Buffer.from(await answer.body.arrayBuffer());
    // No redirect is followed (the WebClient asks for none): a 3xx is answered as it came.
    return new BufferedResponse(href, answer.statusCode, "", headersFromReceived(answer.headers), bytes);
  };
}
