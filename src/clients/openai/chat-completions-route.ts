// POST /v1/chat/completions on the HTTP fast path: what the express route does (the Origin and key
// rules, the JSON body parser, the limit that leaves room for inline images), without express.
// It takes only requests express's parser would read as plain UTF-8 JSON; any other (another
// charset or media type, no body at all) goes to express, which answers it as before.
import type { IncomingHttpHeaders, IncomingMessage } from "node:http";
import { HttpError, writeError } from "../../gateway/http-errors.js";
import type { DirectPostRoute } from "../../gateway/types.js";
import type { ProtectedAccess } from "../protected-access.js";
import { checkBeforeParse, checkBodyLimit, parserLimitBytes } from "./body-limit.js";
import { handleChatCompletion, type ApiServerDeps } from "./chat-completions.js";

export const CHAT_COMPLETIONS_PATH = "/v1/chat/completions";

export function chatCompletionsRoute(deps: ApiServerDeps, access: ProtectedAccess): DirectPostRoute {
  return {
    path: CHAT_COMPLETIONS_PATH,
    bodyLimitBytes: parserLimitBytes(deps.config),
    takes: (req) => hasBody(req) && isUtf8Json(req.headers),
    refusal: access,
    answer: async (req, body, res) => {
      try {
        const parsed = parseJsonBody(body, (text) => checkBeforeParse(deps.config, text));
        checkBodyLimit(deps.config, body.length, parsed);
        await handleChatCompletion(deps, { headers: req.headers, body: parsed }, res);
      } catch (err) {
        if (!(err instanceof HttpError) || res.headersSent) throw err;
        writeError(res, err);
      }
    },
  };
}

/** As the body parser decides whether there is a body to read at all. */
function hasBody(req: IncomingMessage): boolean {
  return req.headers["transfer-encoding"] !== undefined || !Number.isNaN(Number(req.headers["content-length"]));
}

/** `application/json`, with no parameter but an optional `charset=utf-8`. */
function isUtf8Json(headers: IncomingHttpHeaders): boolean {
  const value = headers["content-type"];
  if (value === undefined) return false;
  const [type, ...params] = value.toLowerCase().split(";").map((part) => part.trim());
  if (type !== "application/json") return false;
  return params.length === 0 || (params.length === 1 && /^charset=(utf-8|"utf-8")$/.test(params[0]));
}

/** JSON's whitespace (RFC 8259): space, tab, line feed, carriage return. */
const FIRST_NON_WHITESPACE = /^[ \t\n\r]*(.?)/s;

/**
 * The body as express's JSON parser reads it: UTF-8 without a byte-order mark, an empty body as
 * `{}`, and only an object or an array at the top (strict mode); anything else is malformed.
 * `check` sees the text first and may refuse it unparsed.
 */
function parseJsonBody(body: Buffer, check: (text: string) => void): unknown {
  let text = body.toString("utf8");
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  if (text.length === 0) return {};
  const first = FIRST_NON_WHITESPACE.exec(text)?.[1];
  if (first !== "{" && first !== "[") throw malformed();
  check(text);
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw malformed();
  }
}

const malformed = (): HttpError => new HttpError("malformed_json");
