// The keep-alive connection pool an adapter sends its outbound calls through (undici's Agent, for
// its `request`): the time limit of a call is the pool's connect, headers and body timeouts, on
// undici's own coarse timers, instead of an abort signal and a timer for every call.
import { Agent } from "undici";

/** A pool of `connectionsPerOrigin` keep-alive connections per origin, each phase of a call (connect, headers, body) limited to `timeoutMs`. */
export function boundedPool(connectionsPerOrigin: number, timeoutMs: number): Agent {
  return new Agent({
    connections: connectionsPerOrigin,
    keepAliveTimeout: 30_000,
    connect: { timeout: timeoutMs },
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
  });
}
