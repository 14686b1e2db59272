// HTTP plumbing every adapter route shares: raw-body parsing (signatures are computed over the
// exact bytes) and the core's JSON errors on the route itself.
import express, { type Request, type RequestHandler, type Response, type Router } from "express";
import type { Logger } from "pino";
import { jsonErrorHandler } from "../../gateway/http-errors.js";
import type { PlainAnswer } from "../../gateway/types.js";

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

export interface PostRouteOptions {
  bodyLimitBytes: number;
  /** Where an unexpected error of the route is reported. */
  logger: Logger;
}

/**
 * Mounts one POST route that parses its own raw body and reports errors as JSON. The parser and
 * the error handler sit on the route itself, so other routers mounted at the root are untouched.
 */
export function postRoute(router: Router, path: string, options: PostRouteOptions, handler: RequestHandler): void {
  router.post(path, rawBodyParser(options.bodyLimitBytes), handler, jsonErrorHandler(options.logger));
}

/** Writes a plain route's answer through express: its JSON body, or none. */
export function sendPlainAnswer(res: Response, answer: PlainAnswer): void {
  res.status(answer.status);
  if (answer.json === undefined) res.end();
  else res.json(answer.json);
}
