// The rules of the API-key routes (/v1, /api, /admin) for a POST the HTTP fast path answers
// before express: the Origin rule, then the key, in express's order and with express's answers.
import type { IncomingMessage } from "node:http";
import { errorAnswer, type ErrorAnswer } from "../gateway/http-errors.js";
import { keyRefusal, requestToken, type ApiKeyCheck } from "./auth.js";
import { originAllowed, type BrowserRules } from "./browser-rules.js";
import { clientAddress } from "./forwarded.js";

/** Why a POST to a protected route is refused before its body is read, or null when it may go on. */
export type ProtectedAccess = (req: IncomingMessage) => ErrorAnswer | null;

const ORIGIN_REFUSED = errorAnswer("origin_not_allowed");

export function protectedAccess(keys: ApiKeyCheck, rules: BrowserRules): ProtectedAccess {
  return (req) => {
    if (!originAllowed(req, rules)) return ORIGIN_REFUSED;
    return keyRefusal(keys.check(requestToken(req), clientAddress(req, rules.trustProxyHops)));
  };
}
