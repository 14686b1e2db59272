// Bearer-token auth for the API, /ws, /api, the console and the queue dashboard. With no key
// configured the server only listens on loopback (enforced by the config) and lets everyone in.
import { timingSafeEqual, createHash } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { RequestHandler } from "express";
import { sendError } from "../gateway/http-errors.js";

export const TOKEN_COOKIE = "switchboard_token";

/** Constant-time comparison that does not leak the key's length either. */
export function tokenMatches(expected: string, given: string | null | undefined): boolean {
  if (!given) return false;
  const a = createHash("sha256").update(expected).digest();
  const b = createHash("sha256").update(given).digest();
  return timingSafeEqual(a, b);
}

function cookieToken(header: string | undefined): string | null {
  if (!header) return null;
  for (const part of header.split(";")) {
    const [name, ...rest] = part.trim().split("=");
    if (name === TOKEN_COOKIE) return decodeURIComponent(rest.join("="));
  }
  return null;
}

/** The token a request carries: `Authorization: Bearer`, `?token=`, or the console's cookie. */
export function requestToken(req: IncomingMessage): string | null {
  const header = req.headers.authorization;
  if (header && /^bearer\s+/i.test(header)) return header.replace(/^bearer\s+/i, "").trim();
  const url = new URL(req.url ?? "/", "http://localhost");
  const query = url.searchParams.get("token");
  if (query) return query;
  return cookieToken(req.headers.cookie);
}

export function isAuthorized(apiKey: string | null, req: IncomingMessage): boolean {
  return apiKey === null || tokenMatches(apiKey, requestToken(req));
}

export function requireApiKey(apiKey: string | null): RequestHandler {
  return (req, res, next) => {
    if (isAuthorized(apiKey, req)) {
      next();
      return;
    }
    const hadToken = requestToken(req) !== null;
    sendError(res, 401, hadToken ? "invalid_api_key" : "missing_api_key", hadToken ? "invalid API key" : "missing API key: send Authorization: Bearer <key>", {
      headers: { "WWW-Authenticate": 'Bearer realm="switchboard"' },
    });
  };
}
