// HTTP plumbing every adapter route shares: raw-body parsing (signatures are computed over the
// exact bytes), and errors as JSON `{"error":{"message","type","code"}}`.
import express, {
  type ErrorRequestHandler,
  type Request,
  type RequestHandler,
  type Response,
  type Router,
} from "express";
import { typeForStatus } from "../../gateway/http-errors.js";

export interface ErrorBody {
  error: { message: string; type: string; code: string };
}

// The gateway's error vocabulary (one `type` per status); only the default codes are ours.
const DEFAULT_CODE: Record<number, string> = {
  400: "malformed_request",
  401: "invalid_signature",
  404: "not_found",
  409: "conflict",
  413: "body_too_large",
  415: "unsupported_encoding",
  429: "rate_limited",
  502: "bad_gateway",
  503: "dependency_unavailable",
  504: "timeout",
};

export function errorBody(status: number, message: string, code?: string, type?: string): ErrorBody {
  const fallbackCode = DEFAULT_CODE[status] ?? (status >= 500 ? "internal_error" : "bad_request");
  return { error: { message, type: type ?? typeForStatus(status), code: code ?? fallbackCode } };
}

/** Answer with the project's JSON error shape. */
export function sendError(
  res: Response,
  status: number,
  message: string,
  code?: string,
  extra?: Record<string, unknown>,
): void {
  res.status(status).json({ ...errorBody(status, message, code), ...extra });
}

/** Reads the whole body, whatever its content type, as a Buffer on `req.body`. */
export function rawBodyParser(limitBytes: number): RequestHandler {
  return express.raw({ type: () => true, limit: limitBytes });
}

/**
 * The exact bytes the client sent: our own raw parser's Buffer, or `req.rawBody` when the app
 * consumed the body earlier and kept the bytes. An absent body is an empty Buffer.
 */
export function readRawBody(req: Request): Buffer {
  if (Buffer.isBuffer(req.body)) return req.body;
  const kept = (req as Request & { rawBody?: unknown }).rawBody;
  if (Buffer.isBuffer(kept)) return kept;
  if (typeof kept === "string") return Buffer.from(kept, "utf8");
  return Buffer.alloc(0);
}

interface HttpLikeError {
  status?: number;
  statusCode?: number;
  type?: string;
  expose?: boolean;
  message?: string;
}

/** Turns body-parser errors (413, aborted requests...) and anything unexpected into JSON errors. */
export const jsonErrorHandler: ErrorRequestHandler = (err: unknown, _req, res, next) => {
  if (res.headersSent) {
    next(err);
    return;
  }
  const e = (typeof err === "object" && err !== null ? err : {}) as HttpLikeError;
  const status = e.status ?? e.statusCode ?? 500;
  if (e.type === "entity.too.large" || status === 413) {
    sendError(res, 413, "request body is too large", "body_too_large");
    return;
  }
  if (status >= 400 && status < 500) {
    sendError(res, status, e.expose && e.message ? e.message : "malformed request");
    return;
  }
  sendError(res, 500, "internal error", "internal_error");
};

/**
 * Mounts one POST route that parses its own raw body and reports errors as JSON. The parser and
 * the error handler sit on the route itself, so other routers mounted at the root are untouched.
 */
export function postRoute(router: Router, path: string, limitBytes: number, handler: RequestHandler): void {
  router.post(path, rawBodyParser(limitBytes), handler, jsonErrorHandler);
}
