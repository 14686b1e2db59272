// Who may upgrade: the token comes from `Authorization: Bearer <token>` or `?token=<token>` (a
// browser cannot put a header on a WebSocket); a refused upgrade gets a plain HTTP status line
// with a JSON body and the socket is closed.
import { STATUS_CODES, type IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { errorAnswer, type HttpErrorCode } from "../../gateway/http-errors.js";

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

export interface Refusal {
  /** The error body's message; the catalogue's by default. */
  message?: string;
  retryAfterSeconds?: number;
}

/** Answer an upgrade request with the catalogue's error `code` and close the socket once it is written. */
export function refuseUpgrade(socket: Duplex, code: HttpErrorCode, refusal: Refusal = {}): void {
  const { status, message } = errorAnswer(code, refusal.message);
  const extraHeaders = [
    ...(status === 401 ? ['WWW-Authenticate: Bearer realm="switchboard"'] : []),
    ...(refusal.retryAfterSeconds !== undefined ? [`Retry-After: ${refusal.retryAfterSeconds}`] : []),
  ];
  if (socket.writable) {
    const reason = STATUS_CODES[status] ?? "Error";
    const body = JSON.stringify({ error: { message, type: "websocket_upgrade", code } });
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
