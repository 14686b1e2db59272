// Who may upgrade: the token comes from `Authorization: Bearer <token>` or `?token=<token>`;
// a refused upgrade gets a plain HTTP status line and the socket is closed.
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";

export type Authenticate = (token: string | null, req: IncomingMessage) => boolean;

/** The bearer token of an upgrade request, from the Authorization header or the query string. */
export function tokenFromRequest(req: IncomingMessage, url: URL): string | null {
  const header = req.headers.authorization;
  if (header) {
    const match = /^Bearer\s+(.+)$/i.exec(header.trim());
    if (match) return match[1].trim();
  }
  return url.searchParams.get("token");
}

/** Whether the request may connect; an authenticate() that throws refuses. */
export function isAuthorised(authenticate: Authenticate, req: IncomingMessage, url: URL): boolean {
  try {
    return authenticate(tokenFromRequest(req, url), req) === true;
  } catch {
    return false;
  }
}

type RefusalStatus = 400 | 401 | 404 | 503;

const REASONS: Record<RefusalStatus, [reason: string, code: string]> = {
  400: ["Bad Request", "bad_request"],
  401: ["Unauthorized", "unauthorized"],
  404: ["Not Found", "not_found"],
  503: ["Service Unavailable", "unavailable"],
};

/** Answer an upgrade request with an HTTP error and close the socket once it is written. */
export function refuseUpgrade(socket: Duplex, status: RefusalStatus): void {
  const extraHeaders = status === 401 ? ['WWW-Authenticate: Bearer realm="switchboard"'] : [];
  if (socket.writable) {
    const [reason, code] = REASONS[status];
    const body = JSON.stringify({ error: { message: reason, type: "websocket_upgrade", code } });
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
