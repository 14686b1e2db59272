// Who may upgrade: the token comes from `Authorization: Bearer <token>` or `?token=<token>` (a
// browser cannot put a header on a WebSocket); a refused upgrade gets a plain HTTP status line
// with a JSON body and the socket is closed.
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";

/** Whether the token may connect: true, false (401), or a rate limit (429). */
export type AuthResult = boolean | { retryAfterSeconds: number };
export type Authenticate = (token: string | null, req: IncomingMessage) => AuthResult;

/** The bearer token of an upgrade request, from the Authorization header or the query string. */
export function tokenFromRequest(req: IncomingMessage, url: URL): string | null {
  const header = req.headers.authorization;
  if (header) {
    const match = /^Bearer\s+(.+)$/i.exec(header.trim());
    if (match) return match[1].trim();
  }
  return url.searchParams.get("token");
}

/** What authenticate() says of the request; one that throws refuses. */
export function authorise(authenticate: Authenticate, req: IncomingMessage, url: URL): AuthResult {
  try {
    const result = authenticate(tokenFromRequest(req, url), req);
    return typeof result === "object" ? result : result === true;
  } catch {
    return false;
  }
}

export type RefusalStatus = 400 | 401 | 403 | 404 | 421 | 429 | 503;

const REASONS: Record<RefusalStatus, [reason: string, code: string]> = {
  400: ["Bad Request", "bad_request"],
  401: ["Unauthorized", "unauthorized"],
  403: ["Forbidden", "origin_not_allowed"],
  404: ["Not Found", "not_found"],
  421: ["Misdirected Request", "host_not_allowed"],
  429: ["Too Many Requests", "too_many_failed_keys"],
  503: ["Service Unavailable", "unavailable"],
};

export interface Refusal {
  /** The error body's message; the status's reason phrase by default. */
  message?: string;
  /** Overrides the status's usual code. */
  code?: string;
  retryAfterSeconds?: number;
}

/** Answer an upgrade request with an HTTP error and close the socket once it is written. */
export function refuseUpgrade(socket: Duplex, status: RefusalStatus, refusal: Refusal = {}): void {
  const extraHeaders = [
    ...(status === 401 ? ['WWW-Authenticate: Bearer realm="switchboard"'] : []),
    ...(refusal.retryAfterSeconds !== undefined ? [`Retry-After: ${refusal.retryAfterSeconds}`] : []),
  ];
  if (socket.writable) {
    const [reason, defaultCode] = REASONS[status];
    const body = JSON.stringify({ error: { message: refusal.message ?? reason, type: "websocket_upgrade", code: refusal.code ?? defaultCode } });
    socket.once("finish", () => socket.destroy());
    socket.end(
      [
        `HTTP/1.1 ${status} ${reason}`,
        "Connection: close",
        "Content-Type: application/json",
        `Content-Length: ${Buffer.byteLength(body)}`,
        ...extraHeaders,
        "",
        body,
      ].join("\r\n"),
    );
    return;
  }
  socket.destroy();
}
