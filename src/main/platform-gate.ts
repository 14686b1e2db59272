// In front of the platform routes (Slack, Discord, Telegram, WhatsApp, the webhook routes), before
// Express, from the request's headers alone (PlatformRequestRule):
// - a client address whose requests failed a route's signature or secret check (401) too often
//   within a minute gets 429 with Retry-After for each further wrong one, on every platform route.
//   Its requests are still checked: a right signature goes through, so that another tenant of a
//   platform's shared addresses (a bot pointed at this URL, a repository's webhook) cannot hold
//   back the real platform's requests;
// - what the headers show wrong (a missing signature header, a stale timestamp, a wrong secret
//   token, a declared length over the platform's limit) is answered before the body is read;
// - bodies read before their signature is checked share one budget of bytes in the process: a
//   request's declared length (else its route's limit) is held from its headers until its body
//   has been read; past the budget, 503 with Retry-After.
import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";
import { KeyAttempts, type KeyAttemptLimits } from "../clients/key-attempts.js";
import { errorAnswer, errorBody, writeError, type ErrorAnswer } from "../gateway/http-errors.js";
import type { PlatformRequestRule } from "../gateway/types.js";

/** Room for a few bodies of the default 1 MiB limit, or thousands of a platform's usual few KB. */
export const DEFAULT_UNVERIFIED_BUDGET_BYTES = 8 * 1024 * 1024;

export interface PlatformGateOptions {
  rules: readonly PlatformRequestRule[];
  /** The client's address (honouring X-Forwarded-For only as TRUST_PROXY says). */
  clientAddress: (req: IncomingMessage) => string;
  /** Wrong signatures an address may send per window; default the API key's (10 a minute). */
  attemptLimits?: KeyAttemptLimits;
  /** A no-key gateway's Host rule: a request it refuses goes on as it is, to be answered 421 first. */
  hostAllowed?: (req: IncomingMessage) => boolean;
  /** Bytes of unverified bodies held at once; default DEFAULT_UNVERIFIED_BUDGET_BYTES. */
  unverifiedBudgetBytes?: number;
  /** Told how long each platform request took, from its headers read to its answer written. */
  onAnswered?: (path: string, seconds: number) => void;
  now?: () => number;
}

const BUSY = errorAnswer("too_many_unverified_requests", undefined, { "Retry-After": "1" });

export function withPlatformGate(listener: RequestListener, options: PlatformGateOptions): RequestListener {
  const rules = new Map(options.rules.map((rule) => [routingKey(rule.path), rule]));
  if (rules.size === 0) return listener;
  const attempts = new KeyAttempts(options.attemptLimits);
  const now = options.now ?? Date.now;
  const budget = options.unverifiedBudgetBytes ?? DEFAULT_UNVERIFIED_BUDGET_BYTES;
  let held = 0;
  return (req, res) => {
    const rule = req.method === "POST" ? rules.get(routingKey(pathOf(req.url ?? ""))) : undefined;
    if (rule === undefined || (options.hostAllowed !== undefined && !options.hostAllowed(req))) return listener(req, res);
    const started = performance.now();
    if (options.onAnswered) res.once("finish", () => options.onAnswered?.(rule.path, (performance.now() - started) / 1000));
    const address = options.clientAddress(req);
    const wait = attempts.retryAfterSeconds(address);
    if (wait > 0) answerFailuresWith(res, tooManyFailures(wait));
    res.once("finish", () => {
      if (res.statusCode === 401 || res.statusCode === 429) attempts.recordFailure(address);
    });
    const refusal = rule.refusal?.(req.headers, now()) ?? null;
    if (refusal !== null) return refuseUnread(req, res, refusal.status === 401 && wait > 0 ? tooManyFailures(wait) : refusal);
    const declared = declaredLength(req);
    if (declared !== null && declared > rule.maxBodyBytes) {
      return refuseUnread(req, res, errorAnswer("body_too_large", `request body is larger than this route's limit of ${rule.maxBodyBytes} bytes`));
    }
    const size = declared ?? rule.maxBodyBytes;
    if (held + size > budget) return refuseUnread(req, res, BUSY);
    held += size;
    let released = false;
    // Once the body is in, the route checks its signature in the same turn of the event loop.
    const release = (): void => {
      if (released) return;
      released = true;
      held -= size;
    };
    req.once("end", release);
    res.once("close", release);
    listener(req, res);
  };
}

/**
 * The route's own 401 (a wrong signature or secret) goes out as `answer` instead: its status,
 * headers and body replace the route's, whichever way the route writes (node:http or Express).
 */
function answerFailuresWith(res: ServerResponse, answer: ErrorAnswer): void {
  const body = JSON.stringify(errorBody(answer));
  const writeHead = res.writeHead.bind(res) as (status: number, ...rest: unknown[]) => ServerResponse;
  const end = res.end.bind(res) as (...args: unknown[]) => ServerResponse;
  let replaced = false;
  res.writeHead = ((status: number, ...rest: unknown[]) => {
    if (status !== 401) return writeHead(status, ...rest);
    replaced = true;
    // Headers given here win over those the route set (its Content-Length among them).
    return writeHead(answer.status, { ...answer.headers, "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(body) });
  }) as ServerResponse["writeHead"];
  res.end = ((...args: unknown[]) => {
    // Node writes an implicit head through res.writeHead, so a 401 set as statusCode comes here too.
    if (!res.headersSent && res.statusCode === 401) res.writeHead(401);
    return replaced ? end(body) : end(...args);
  }) as ServerResponse["end"];
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
function refuseUnread(req: IncomingMessage, res: ServerResponse, answer: ErrorAnswer): void {
  res.shouldKeepAlive = false;
  writeError(res, answer);
  req.resume();
}

/** The declared Content-Length; null when absent (chunked) or not a number. */
function declaredLength(req: IncomingMessage): number | null {
  const value = req.headers["content-length"];
  if (value === undefined || !/^\d+$/.test(value)) return null;
  return Number(value);
}

/** As Express matches a route: without case, without a trailing slash. */
function routingKey(path: string): string {
  return path.toLowerCase().replace(/\/+$/, "");
}

function pathOf(url: string): string {
  const query = url.indexOf("?");
  return query === -1 ? url : url.slice(0, query);
}
