// The HTTP server's first stop. The few POST routes on the hot path are answered here, without
// express's router, body parser and stream plumbing; every other request goes to the express app
// untouched. Two kinds: an adapter's PlainPostRoute, a plain function of the headers and the raw
// body (Slack's events, each signed webhook route), and a DirectPostRoute that writes its own
// answer (the API's chat completions, behind its Origin and key rules). The answers are the
// express route's: the no-key Host rule first, the route's access rules, the same body limit
// (413 once the body is read off, as the body parser does), the same JSON errors.
import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";
import type { Logger } from "pino";
import { errorAnswer, writeError, writeJson } from "../gateway/http-errors.js";
import type { DirectPostRoute, PlainAnswer, PlainPostRoute } from "../gateway/types.js";
import { without } from "../shared/bench-without.js";

export interface FastPathOptions {
  routes: readonly PlainPostRoute[];
  /** Routes that write their own answers; each takes only the requests it says it takes. */
  directRoutes?: readonly DirectPostRoute[];
  /** A no-key gateway's Host rule (browser-rules' hostAllowed), which express applies first; unset with a key. */
  hostAllowed?: (req: IncomingMessage) => boolean;
  /** Where an unexpected error of a route is reported. */
  logger: Logger;
  /** Every other request: the express app. */
  fallback: RequestListener;
  /** Told how long each answer of a PlainPostRoute took, from its headers to its answer written. */
  onAnswered?: (path: string, seconds: number) => void;
}

// The answers express gives the same requests (its error handler, body parser and Host rule).
const INTERNAL_ERROR = errorAnswer("internal_error");
const BODY_TOO_LARGE = errorAnswer("body_too_large");
const HOST_NOT_ALLOWED = errorAnswer("host_not_allowed");

export function withFastPath(options: FastPathOptions): RequestListener {
  const { fallback, hostAllowed, logger } = options;
  const routes = new Map(options.routes.map((route) => [route.path, route]));
  const directRoutes = new Map((options.directRoutes ?? []).map((route) => [route.path, route]));
  if ((routes.size === 0 && directRoutes.size === 0) || without("http-fast-path")) return fallback;
  const unexpected = (err: unknown, req: IncomingMessage, res: ServerResponse, path: string): void => {
    logger.error({ err, path, method: req.method }, "unhandled request error");
    if (res.headersSent) res.end();
    else writeError(res, INTERNAL_ERROR);
  };
  const answerPlain = (route: PlainPostRoute, req: IncomingMessage, res: ServerResponse): void => {
    const started = performance.now();
    const answered = (): void => options.onAnswered?.(route.path, (performance.now() - started) / 1000);
    readBody(req, route.bodyLimitBytes, (body) => {
      if (body === null) {
        writeError(res, BODY_TOO_LARGE);
        return answered();
      }
      route.answer(req.headers, body).then(
        (answer) => {
          writeAnswer(res, answer);
          answered();
        },
        (err: unknown) => {
          unexpected(err, req, res, route.path);
          answered();
        },
      );
    });
  };
  const answerDirect = (route: DirectPostRoute, req: IncomingMessage, res: ServerResponse): void => {
    const refusal = route.refusal(req);
    if (refusal !== null) return writeError(res, refusal);
    readBody(req, route.bodyLimitBytes, (body) => {
      if (body === null) return writeError(res, BODY_TOO_LARGE);
      route.answer(req, body, res).catch((err: unknown) => unexpected(err, req, res, route.path));
    });
  };
  return (req, res) => {
    const path = req.method === "POST" ? pathOf(req.url ?? "") : "";
    const plain = routes.get(path);
    const direct = directRoutes.get(path);
    // A compressed body goes to the body parser, which inflates it before the signature check.
    if (compressed(req) || (plain === undefined && (direct === undefined || !direct.takes(req)))) {
      fallback(req, res);
      return;
    }
    if (hostAllowed && !hostAllowed(req)) return writeError(res, HOST_NOT_ALLOWED);
    if (plain !== undefined) answerPlain(plain, req, res);
    else if (direct !== undefined) answerDirect(direct, req, res);
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
  writeJson(res, answer.status, answer.json);
}
