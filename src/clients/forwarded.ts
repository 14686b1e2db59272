// What a request looks like once the proxies in front of the gateway are accounted for.
// `hops` is TRUST_PROXY: how many proxies in front of the gateway add `X-Forwarded-*` headers.
// With 0 (the default) those headers are ignored: anyone can send them, so only a proxy the
// operator put there may be believed.
import type { IncomingMessage } from "node:http";

function headerValue(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(",") : value;
}

/**
 * The client's address: the socket's peer, or with `hops` trusted proxies the address the
 * outermost trusted proxy saw (`X-Forwarded-For` read from the right, one entry per hop), as
 * express computes `req.ip` with a numeric `trust proxy`.
 */
export function clientAddress(req: IncomingMessage, hops: number): string {
  const peer = req.socket.remoteAddress ?? "unknown";
  if (hops <= 0) return peer;
  const forwarded = (headerValue(req, "x-forwarded-for") ?? "")
    .split(",")
    .map((part) => part.trim())
    .filter((part) => part !== "");
  // Nearest first: the peer, then the entries each proxy appended, right to left.
  const chain = [peer, ...forwarded.reverse()];
  return chain[Math.min(hops, chain.length - 1)];
}

/** The first value of a forwarded header a trusted proxy set (express reads them the same way). */
function firstForwarded(req: IncomingMessage, name: string): string | undefined {
  const value = headerValue(req, name);
  const first = value?.split(",")[0]?.trim();
  return first ? first : undefined;
}

/** The host name the client asked for: `Host`, or `X-Forwarded-Host` behind a trusted proxy. */
export function requestHost(req: IncomingMessage, hops: number): string | undefined {
  const forwarded = hops > 0 ? firstForwarded(req, "x-forwarded-host") : undefined;
  return forwarded ?? req.headers.host;
}

/** `https` when the connection (or, behind a trusted proxy, the client's) used TLS. */
export function requestScheme(req: IncomingMessage, hops: number): "http" | "https" {
  const forwarded = hops > 0 ? firstForwarded(req, "x-forwarded-proto")?.toLowerCase() : undefined;
  if (forwarded === "https" || forwarded === "http") return forwarded;
  return (req.socket as { encrypted?: boolean }).encrypted ? "https" : "http";
}
