// The API key for /v1, /api, /admin and /ws. With no key configured the server only listens on
// loopback (enforced by the config) and lets everyone in (the browser rules still hold).
//
// Where a key may come from: `Authorization: Bearer <key>` everywhere; the admin cookie under
// /admin; `?token=` only where a browser cannot send a header (the /ws upgrade and the
// /admin/queues redirect, which moves it into the cookie): a key in a URL ends up in logs and
// browser history. Wrong keys are counted per client address and refused with 429 past a burst.
import { timingSafeEqual, createHash } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { Request, RequestHandler } from "express";
import { errorAnswer, sendError, type ErrorAnswer } from "../gateway/http-errors.js";
import { KeyAttempts } from "./key-attempts.js";

export const TOKEN_COOKIE = "switchboard_token";

/** Constant-time comparison that does not leak the key's length either. */
export function tokenMatches(expected: string, given: string | null | undefined): boolean {
  if (!given) return false;
  const a = createHash("sha256").update(expected).digest();
  const b = createHash("sha256").update(given).digest();
  return timingSafeEqual(a, b);
}

/** The admin cookie's value; a malformed one is no token at all. */
function cookieToken(header: string | undefined): string | null {
  if (!header) return null;
  for (const part of header.split(";")) {
    const [name, ...rest] = part.trim().split("=");
    if (name !== TOKEN_COOKIE) continue;
    try {
      return decodeURIComponent(rest.join("=")) || null;
    } catch {
      return null;
    }
  }
  return null;
}

/** The bearer token of `Authorization`, if the header is one. */
export function bearerToken(req: IncomingMessage): string | null {
  const header = req.headers.authorization;
  const match = header ? /^bearer\s+(.+)$/i.exec(header.trim()) : null;
  return match ? match[1].trim() : null;
}

function queryToken(req: IncomingMessage): string | null {
  return new URL(req.url ?? "/", "http://localhost").searchParams.get("token") || null;
}

/** The token a request carries: the bearer header, the console's cookie, or (where allowed) `?token=`. */
export function requestToken(req: IncomingMessage, options: { query?: boolean } = {}): string | null {
  return bearerToken(req) ?? (options.query ? queryToken(req) : null) ?? cookieToken(req.headers.cookie);
}

export type KeyDecision =
  | { ok: true }
  | { ok: false; reason: "missing" | "invalid" }
  | { ok: false; reason: "rate_limited"; retryAfterSeconds: number };

/** Checks keys for every route and the WebSocket upgrade, sharing one count of wrong keys. */
export class ApiKeyCheck {
  constructor(
    readonly apiKey: string | null,
    private readonly attempts = new KeyAttempts(),
  ) {}

  get required(): boolean {
    return this.apiKey !== null;
  }

  check(token: string | null, clientAddress: string): KeyDecision {
    if (this.apiKey === null) return { ok: true };
    if (token === null) return { ok: false, reason: "missing" };
    // A limited address gets no answer about its key, right or wrong.
    const retryAfterSeconds = this.attempts.retryAfterSeconds(clientAddress);
    if (retryAfterSeconds > 0) return { ok: false, reason: "rate_limited", retryAfterSeconds };
    if (tokenMatches(this.apiKey, token)) return { ok: true };
    this.attempts.recordFailure(clientAddress);
    return { ok: false, reason: "invalid" };
  }
}

export interface ApiKeyGuardOptions {
  /** The address wrong keys are counted against (TRUST_PROXY-aware). */
  clientAddress: (req: Request) => string;
  /** Requests that may carry the key as `?token=` (the admin redirect). */
  acceptsQueryToken?: (req: Request) => boolean;
}

/** What a request whose key the check refused is answered (Express); null when it may pass. */
export function keyRefusal(decision: KeyDecision): ErrorAnswer | null {
  if (decision.ok) return null;
  if (decision.reason === "rate_limited") {
    const seconds = decision.retryAfterSeconds;
    return errorAnswer("too_many_failed_keys", `too many wrong API keys from this address; retry in ${seconds} s`, { "Retry-After": String(seconds) });
  }
  return errorAnswer(decision.reason === "missing" ? "missing_api_key" : "invalid_api_key", undefined, { "WWW-Authenticate": 'Bearer realm="switchboard"' });
}

export function requireApiKey(keys: ApiKeyCheck, options: ApiKeyGuardOptions): RequestHandler {
  return (req, res, next) => {
    const token = requestToken(req, { query: options.acceptsQueryToken?.(req) ?? false });
    const refusal = keyRefusal(keys.check(token, options.clientAddress(req)));
    if (refusal === null) {
      next();
      return;
    }
    sendError(res, refusal.code, refusal.message, refusal.headers);
  };
}
