// JSON errors with stable codes: {"error":{"message","type","code"}}.
import type { ServerResponse } from "node:http";
import type { ErrorRequestHandler, Response } from "express";
import type { Logger } from "pino";

export class HttpError extends Error implements ErrorAnswer {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = "HttpError";
  }
}

/** The error `type` every JSON error of the project uses for a status. */
export const typeForStatus = (status: number): string =>
  status === 401 ? "authentication_error"
  : status === 404 ? "not_found_error"
  : status === 409 ? "conflict_error"
  : status === 413 ? "request_too_large"
  : status === 429 ? "rate_limit_error"
  : status >= 500 ? "server_error"
  : "invalid_request_error";

/** What an error answer may carry besides its message and code. */
export interface ErrorExtras {
  /** Response headers (e.g. `WWW-Authenticate`). */
  headers?: Record<string, string>;
  /** Top-level fields beside `error` (e.g. the `session_id` a webhook answer names). */
  fields?: Record<string, unknown>;
}

/** The project's JSON error body; the `type` follows from the status. */
export function errorBody(status: number, code: string, message: string): { error: { message: string; type: string; code: string } } {
  return { error: { message, type: typeForStatus(status), code } };
}

/** An error answer decided before a route runs (the browser rules, the API key, the body limit). */
export interface ErrorAnswer {
  readonly status: number;
  readonly code: string;
  readonly message: string;
  readonly headers?: Readonly<Record<string, string>>;
}

/**
 * A JSON answer on a bare node:http response, as express's `res.json` writes it (its charset and
 * length; no ETag, which a POST's answer never needs). Headers set earlier with setHeader stay.
 */
export function writeJson(res: ServerResponse, status: number, json: unknown, headers: Readonly<Record<string, string>> = {}): void {
  const body = JSON.stringify(json);
  res.writeHead(status, { ...headers, "Content-Type": "application/json; charset=utf-8", "Content-Length": Buffer.byteLength(body) });
  res.end(body);
}

/** An error answer on a bare node:http response, in the project's JSON error shape. */
export function writeError(res: ServerResponse, error: ErrorAnswer): void {
  writeJson(res, error.status, errorBody(error.status, error.code, error.message), error.headers);
}

/** Answer with the project's JSON error shape; the `type` follows from the status. */
export function sendError(res: Response, status: number, code: string, message: string, extras: ErrorExtras = {}): void {
  for (const [k, v] of Object.entries(extras.headers ?? {})) res.setHeader(k, v);
  res.status(status).json({ ...errorBody(status, code, message), ...extras.fields });
}

/** A body over the configured limit: the body parser's error, and the HTTP fast path's. */
export const BODY_TOO_LARGE = { status: 413, code: "body_too_large", message: "request body is larger than the configured limit" } as const;

/** A JSON body that does not parse: the body parser's error, and the HTTP fast path's. */
export const MALFORMED_JSON = { status: 400, code: "malformed_json", message: "request body is not valid JSON" } as const;

interface BodyParserError {
  type?: string;
  status?: number;
  statusCode?: number;
  expose?: boolean;
  message?: string;
}

/**
 * The last error middleware of the app, and of each adapter route: every error becomes JSON,
 * body-parser errors keep their status, anything unexpected is logged and answered 500.
 */
export function jsonErrorHandler(logger: Logger): ErrorRequestHandler {
  return (err: unknown, req, res, _next) => {
    if (res.headersSent) {
      res.end();
      return;
    }
    if (err instanceof HttpError) {
      sendError(res, err.status, err.code, err.message, { headers: err.headers });
      return;
    }
    const parserError = err as BodyParserError;
    if (parserError?.type === "entity.too.large") {
      sendError(res, BODY_TOO_LARGE.status, BODY_TOO_LARGE.code, BODY_TOO_LARGE.message);
      return;
    }
    if (parserError?.type === "entity.parse.failed") {
      sendError(res, MALFORMED_JSON.status, MALFORMED_JSON.code, MALFORMED_JSON.message);
      return;
    }
    const status = parserError?.status ?? parserError?.statusCode;
    if (status && status >= 400 && status < 500) {
      sendError(res, status, "bad_request", parserError.expose && parserError.message ? parserError.message : "bad request");
      return;
    }
    logger.error({ err, path: req.path, method: req.method }, "unhandled request error");
    sendError(res, 500, "internal_error", "internal server error");
  };
}
