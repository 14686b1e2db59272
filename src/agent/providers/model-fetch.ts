// The `fetch` the openai client sends with (its documented `fetch` option), backed by undici's
// `request` over a keep-alive pool. A streamed completion arrives as dozens of small SSE chunks;
// the WHATWG fetch wraps each one in web-stream reads and promises, and builds an abort
// controller, listeners and a Response around every call, which with many turns in flight is a
// large share of the workers' CPU and garbage. Here the body is undici's Node stream, which the
// client iterates as is (it reads any async-iterable body), and the client's own abort signal
// and timeout bound the call.
import { request, Agent, type Dispatcher } from "undici";
import type { FetchLike } from "./retry-after-cap.js";
import { headersFromReceived } from "../../shared/received-headers.js";

/** What the openai client reads of a response: status, headers, and the body as a stream or whole. */
class ModelResponse {
  readonly ok: boolean;
  readonly statusText = "";
  readonly redirected = false;
  readonly type = "basic";

  constructor(
    readonly url: string,
    readonly status: number,
    readonly headers: Headers,
    readonly body: Dispatcher.ResponseData["body"],
  ) {
    this.ok = status >= 200 && status < 300;
  }

  text(): Promise<string> {
    return this.body.text();
  }

  json(): Promise<unknown> {
    return this.body.json();
  }

  arrayBuffer(): Promise<ArrayBuffer> {
    return this.body.arrayBuffer();
  }
}

function plainHeaders(init: HeadersInit | undefined): Record<string, string> {
  return Object.fromEntries(new Headers(init).entries());
}

/**
 * A `fetch` for one model client over a keep-alive pool of its own. No timeout of the pool's: a
 * stream may rest between chunks as long as the provider allows (its idle timer), and the client
 * aborts a call that takes too long. A body that is not a string (never sent by the chat
 * completions the provider makes) goes through the global fetch.
 */
export function createModelFetch(): FetchLike {
  const pool = new Agent({ keepAliveTimeout: 30_000, headersTimeout: 0, bodyTimeout: 0 });
  return async (input, init = {}) => {
    if (input instanceof Request || (init.body !== undefined && init.body !== null && typeof init.body !== "string")) return fetch(input, init);
    const url = typeof input === "string" ? input : input.href;
    const answer = await request(url, {
      method: (init.method ?? "GET").toUpperCase() as Dispatcher.HttpMethod,
      headers: plainHeaders(init.headers),
      body: init.body ?? undefined,
      signal: init.signal ?? undefined,
      dispatcher: pool,
    });
    // The client reads only what a Response has that this one has too (see ModelResponse).
    return new ModelResponse(url, answer.statusCode, headersFromReceived(answer.headers), answer.body) as unknown as Response;
  };
}
