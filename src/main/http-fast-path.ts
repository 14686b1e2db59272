// The HTTP server's first stop. The few POST routes an adapter answers as a plain function of the
// headers and the raw body (PlainPostRoute: Slack's events, each signed webhook route) are answered here, without express's
// router, body parser and stream plumbing on the hot path; every other request goes to the
// express app untouched. The answers are the express route's: the no-key Host rule first, the
// same body limit (413 once the body is read off, as the body parser does), the same JSON errors.
import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";
import type { Logger } from "pino";
import { HOST_NOT_ALLOWED } from "../clients/browser-rules.js";
import { BODY_TOO_LARGE, errorBody } from "../gateway/http-errors.js";
import type { PlainAnswer, PlainPostRoute } from "../gateway/types.js";

export interface FastPathOptions {
  routes: readonly PlainPostRoute[];
  /** A no-key gateway's Host rule (browser-rules' hostAllowed), which express applies first; unset with a key. */
  hostAllowed?: (req: IncomingMessage) => boolean;
  /** Where an unexpected error of a route is reported. */
  logger: Logger;
  /** Every other request: the express app. */
  fallback: RequestListener;
}

export function withFastPath(options: FastPathOptions): RequestListener {
  const { fallback, hostAllowed, logger } = options;
  const routes = new Map(options.routes.map((route) => [route.path, route]));
  if (routes.size === 0) return fallback;
  return (req, res) => {
    const route = req.method === "POST" ? routes.get(pathOf(req.url ?? "")) : undefined;
    // A compressed body goes to the body parser, which inflates it before the signature check.
    if (route === undefined || compressed(req)) {
      fallback(req, res);
      return;
    }
    if (hostAllowed && !hostAllowed(req)) {
      writeAnswer(res, error(HOST_NOT_ALLOWED));
      return;
    }
    readBody(req, route.bodyLimitBytes, (body) => {
      if (body === null) {
        writeAnswer(res, error(BODY_TOO_LARGE));
        return;
      }
      route.answer(req.headers, body).then(
        (answer) => writeAnswer(res, answer),
        (err: unknown) => {
          logger.error({ err, path: route.path, method: req.method }, "unhandled request error");
          writeAnswer(res, { status: 500, json: errorBody(500, "internal_error", "internal server error") });
        },
      );
    });
  };
}

/** The path without its query string; any other spelling (a trailing slash, upper case) is express's. */
function pathOf(url: string): string {
  const query = url.indexOf("?");
  return query === -1 ? url : url.slice(0, query);
}

function compressed(req: IncomingMessage): boolean {
  const encoding = req.headers["content-encoding"];
  return encoding !== undefined && encoding.toLowerCase() !== "identity";
}

const error = (e: { status: number; code: string; message: string }): PlainAnswer => ({ status: e.status, json: errorBody(e.status, e.code, e.message) });

/**
 * The whole body, or null when it is over `limit` bytes (declared or received). Like the body
 * parser, an oversize body is still read off to its end before the answer, so the client can
 * finish sending and read the 413. An aborted request gets no answer (nobody is there to read it).
 */
function readBody(req: IncomingMessage, limit: number, done: (body: Buffer | null) => void): void {
  let tooLarge = Number(req.headers["content-length"]) > limit;
  const chunks: Buffer[] = [];
  let received = 0;
  req.on("data", (chunk: Buffer) => {
    if (tooLarge) return;
    received += chunk.length;
    if (received > limit) {
      tooLarge = true;
      chunks.length = 0;
      return;
    }
    chunks.push(chunk);
  });
  req.on("end", () => done(tooLarge ? null : chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, received)));
  req.on("error", () => undefined);
}

/** As express writes them: no body, or JSON with its charset and length. */
function writeAnswer(res: ServerResponse, answer: PlainAnswer): void {
  if (answer.json === undefined) {
    res.statusCode = answer.status;
    res.end();
    return;
  }
  const body = JSON.stringify(answer.json);
  res.writeHead(answer.status, { "Content-Type": "application/json; charset=utf-8", "Content-Length": Buffer.byteLength(body) });
  res.end(body);
}
