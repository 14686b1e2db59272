// In front of the platform routes (Slack, Discord, Telegram, WhatsApp, the webhook routes), before
// the fast path and Express: a client address whose requests failed a route's signature or secret
// check (401) too often within a minute is refused with 429 and Retry-After, before its body is
// read, on every platform route, as a wrong API key is (clients/key-attempts.ts).
import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";
import { KeyAttempts, type KeyAttemptLimits } from "../clients/key-attempts.js";
import { errorAnswer, writeError, type ErrorAnswer } from "../gateway/http-errors.js";
import type { PlatformRequestRule } from "../gateway/types.js";

export interface PlatformGateOptions {
  rules: readonly PlatformRequestRule[];
  /** The client's address (honouring X-Forwarded-For only as TRUST_PROXY says). */
  clientAddress: (req: IncomingMessage) => string;
  /** Wrong signatures an address may send per window; default the API key's (10 a minute). */
  attemptLimits?: KeyAttemptLimits;
}

export function withPlatformGate(listener: RequestListener, options: PlatformGateOptions): RequestListener {
  const rules = new Map(options.rules.map((rule) => [routingKey(rule.path), rule]));
  if (rules.size === 0) return listener;
  const attempts = new KeyAttempts(options.attemptLimits);
  return (req, res) => {
    const rule = req.method === "POST" ? rules.get(routingKey(pathOf(req.url ?? ""))) : undefined;
    if (rule === undefined) return listener(req, res);
    const address = options.clientAddress(req);
    const wait = attempts.retryAfterSeconds(address);
    if (wait > 0) return refuseUnread(req, res, tooManyFailures(wait));
    res.once("finish", () => {
      if (res.statusCode === 401) attempts.recordFailure(address);
    });
    listener(req, res);
  };
}

function tooManyFailures(seconds: number): ErrorAnswer {
  return errorAnswer("too_many_failed_signatures", `too many requests with a wrong signature or secret from this address; retry in ${seconds} s`, {
    "Retry-After": String(seconds),
  });
}

/**
 * Answers without reading the body: the connection closes after the answer, so a large body is
 * not read in (the client may see the answer or a reset, as with any early answer).
 */
export function refuseUnread(req: IncomingMessage, res: ServerResponse, answer: ErrorAnswer): void {
  res.shouldKeepAlive = false;
  writeError(res, answer);
  req.resume();
}

/** As Express matches a route: without case, without a trailing slash. */
function routingKey(path: string): string {
  return path.toLowerCase().replace(/\/+$/, "");
}

function pathOf(url: string): string {
  const query = url.indexOf("?");
  return query === -1 ? url : url.slice(0, query);
}
