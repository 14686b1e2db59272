// What a browser may do to the gateway, in every mode:
// - Host: a gateway without an API key answers only loopback host names (or ALLOWED_HOSTS), so a
//   page on another site cannot reach it by pointing its own name at 127.0.0.1 (DNS rebinding).
// - Origin: a page from another origin may not open /ws or send state-changing requests to the
//   API; the gateway's own origin, ALLOWED_ORIGINS, and clients that send no Origin (curl, SDKs,
//   servers; browsers always send one there) may.
import type { IncomingMessage } from "node:http";
import type { RequestHandler } from "express";
import { sendError } from "../gateway/http-errors.js";
import { requestHost } from "./forwarded.js";

export interface BrowserRules {
  /** Host names (no port) a no-key gateway answers besides loopback ones; lower case. */
  allowedHosts: readonly string[];
  /** Origins (`scheme://host[:port]`) besides the gateway's own that may use /ws and the API. */
  allowedOrigins: readonly string[];
  /** TRUST_PROXY: proxies whose `X-Forwarded-Host` is believed. */
  trustProxyHops: number;
}

export const NO_EXTRA_BROWSER_RULES: BrowserRules = { allowedHosts: [], allowedOrigins: [], trustProxyHops: 0 };

/** `scheme://host[:port]` in canonical form (lower case, default port dropped); null if it is not one. */
export function canonicalOrigin(value: string): string | null {
  try {
    const url = new URL(value);
    if (url.protocol !== "http:" && url.protocol !== "https:") return null;
    return url.origin;
  } catch {
    return null;
  }
}

/** The `host[:port]` and bare host name of a Host header value, canonical; null if it is not one. */
function parseHost(value: string | undefined): { host: string; hostname: string } | null {
  if (!value || /[\s/?#@\\]/.test(value)) return null;
  try {
    const url = new URL(`http://${value}`);
    return { host: url.host, hostname: url.hostname.replace(/\.$/, "") };
  } catch {
    return null;
  }
}

export function isLoopbackHostname(hostname: string): boolean {
  return hostname === "localhost" || hostname === "[::1]" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname);
}

/** Whether a no-key gateway answers this request: its host is a loopback name or listed. */
export function hostAllowed(req: IncomingMessage, rules: BrowserRules): boolean {
  const parsed = parseHost(requestHost(req, rules.trustProxyHops));
  if (!parsed) return false;
  return isLoopbackHostname(parsed.hostname) || rules.allowedHosts.includes(parsed.hostname);
}

/** Whether the request's Origin may act here: none, the gateway's own, or a listed one. */
export function originAllowed(req: IncomingMessage, rules: BrowserRules): boolean {
  const header = req.headers.origin;
  if (header === undefined) return true;
  const origin = canonicalOrigin(header);
  // "null" (sandboxed frames, file: pages) and anything unparsable are foreign.
  if (!origin) return false;
  if (rules.allowedOrigins.includes(origin)) return true;
  // Own origin: the page was served by this gateway under the host name the request names. The
  // scheme is not compared: behind a TLS proxy without TRUST_PROXY the gateway sees plain HTTP.
  const own = parseHost(requestHost(req, rules.trustProxyHops));
  return own !== null && new URL(origin).host === own.host;
}

/** The no-key gateway's Host check, first on every route: 421 for any other host name. */
export function hostGuard(rules: BrowserRules): RequestHandler {
  return (req, res, next) => {
    if (hostAllowed(req, rules)) return next();
    sendError(res, "host_not_allowed");
  };
}

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/** State-changing requests from a foreign page are refused (403), whatever credentials they carry. */
export function originGuard(rules: BrowserRules): RequestHandler {
  return (req, res, next) => {
    if (SAFE_METHODS.has(req.method) || originAllowed(req, rules)) return next();
    sendError(res, "origin_not_allowed");
  };
}
