// JSON errors with stable codes: {"error":{"message","type","code"}}. Every code, with its status
// and default message, is in the catalogue (shared/error-catalogue.ts); these write them.
import type { ServerResponse } from "node:http";
import type { ErrorRequestHandler, Response } from "express";
import type { Logger } from "pino";
import { HTTP_ERRORS, type HttpErrorCode } from "../shared/error-catalogue.js";

export type { HttpErrorCode };

/** An error answer: a catalogue code with its status, a message, and any headers. */
export interface ErrorAnswer {
  readonly status: number;
  readonly code: HttpErrorCode;
  readonly message: string;
  readonly headers?: Readonly<Record<string, string>>;
}

/** The catalogue's answer for `code`, with the caller's own message where it knows more. */
export function errorAnswer(code: HttpErrorCode, message: string = HTTP_ERRORS[code].message, headers?: Record<string, string>): ErrorAnswer {
  const status = HTTP_ERRORS[code].status;
  return headers ? { status, code, message, headers } : { status, code, message };
}

/** An error answer thrown by a route: the JSON error handler writes it. */
export class HttpError extends Error implements ErrorAnswer {
  readonly status: number;

  constructor(
    readonly code: HttpErrorCode,
    message: string = HTTP_ERRORS[code].message,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = "HttpError";
    this.status = HTTP_ERRORS[code].status;
  }
}

/** The error `type` every JSON error of the project uses for a status. */
const typeForStatus = (status: number): string =>
  status === 401 ? "authentication_error"
  : status === 404 ? "not_found_error"
  : status === 409 ? "conflict_error"
  : status === 413 ? "request_too_large"
  : status === 429 ? "rate_limit_error"
  : status >= 500 ? "server_error"
  : "invalid_request_error";

/** The project's JSON error body; the `type` follows from the status. */
export function errorBody(error: ErrorAnswer): { error: { message: string; type: string; code: string } } {
  return { error: { message: error.message, type: typeForStatus(error.status), code: error.code } };
}

/** A plain route's error answer (status and JSON body); `fields` go beside `error` (e.g. a `session_id`). */
export function plainError(code: HttpErrorCode, message?: string, fields?: Record<string, unknown>): { status: number; json: unknown } {
  const answer = errorAnswer(code, message);
  return { status: answer.status, json: { ...errorBody(answer), ...fields } };
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

/** An error answer on a bare node:http response (the platform routes' guard, the WebSocket upgrade). */
export function writeError(res: ServerResponse, error: ErrorAnswer): void {
  writeJson(res, error.status, errorBody(error), error.headers);
}

/** An error answer through express. */
function sendAnswer(res: Response, error: ErrorAnswer): void {
  for (const [k, v] of Object.entries(error.headers ?? {})) res.setHeader(k, v);
  res.status(error.status).json(errorBody(error));
}

/** Answer an express request with the catalogue's error `code`, and the caller's message where it knows more. */
export function sendError(res: Response, code: HttpErrorCode, message?: string, headers?: Record<string, string>): void {
  sendAnswer(res, errorAnswer(code, message, headers));
}

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
      sendAnswer(res, err);
      return;
    }
    const parserError = err as BodyParserError;
    if (parserError?.type === "entity.too.large") {
      sendError(res, "body_too_large");
      return;
    }
    if (parserError?.type === "entity.parse.failed") {
      sendError(res, "malformed_json");
      return;
    }
    const status = parserError?.status ?? parserError?.statusCode;
    if (status && status >= 400 && status < 500) {
      // bad_request keeps the refused request's own 4xx status (415 for a charset, 403, ...).
      sendAnswer(res, { ...errorAnswer("bad_request", parserError.expose && parserError.message ? parserError.message : undefined), status });
      return;
    }
    logger.error({ err, path: req.path, method: req.method }, "unhandled request error");
    sendError(res, "internal_error");
  };
}
