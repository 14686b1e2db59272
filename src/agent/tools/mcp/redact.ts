// What of an MCP server's trouble may be shown: /health gets a coarse class only, the log and the
// model get the reason with anything that looks like a credential masked. A server's stderr and
// an error naming its URL may carry tokens and passwords.
import { StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";

/** Why a server is not (or no longer) connected, as /health shows it. */
export type McpErrorClass = "exited" | "start_timeout" | "session_lost" | "http_error" | "failed";

export function errorClassOf(err: unknown): McpErrorClass {
  if (err instanceof McpError && err.code === ErrorCode.ConnectionClosed) return "exited";
  if (err instanceof McpError && err.code === ErrorCode.RequestTimeout) return "start_timeout";
  if (err instanceof StreamableHTTPError) return err.code === 404 ? "session_lost" : "http_error";
  return "failed";
}

const MASK = "***";
// user:password@ (or a lone user@) after a URL's scheme.
const URL_USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@]*@/gi;
// A query or fragment parameter's value.
const URL_PARAM = /([?&#][^\s=&#]+=)[^\s&#]*/g;
const AUTH_SCHEME = /\b(bearer|basic|token)\s+[^\s,;]+/gi;
// key=value, key: value, "key":"value" where the key names a secret.
// A URL or an auth scheme after the key is masked by the rules above, keeping what it names.
const SECRET_PAIR = /\b([\w-]*(?:token|secret|passw(?:or)?d|pwd|api[_-]?key|auth\w*|credential|cookie|session)[\w-]*"?\s*[=:]\s*"?)(?![a-z][a-z0-9+.-]*:\/\/|(?:bearer|basic|token)\s|\*\*\*)[^\s"',;&]+/gi;
// A long opaque run of letters and digits (keys, hex digests): masked wherever it is.
const OPAQUE = /\b(?=[A-Za-z_-]*\d)(?=[\d_-]*[A-Za-z])[A-Za-z0-9_-]{24,}\b/g;

/** The text with URL credentials, query values, auth headers, key=value secrets and long tokens masked. */
export function redactSecrets(text: string): string {
  return text
    .replace(URL_USERINFO, `$1${MASK}@`)
    .replace(URL_PARAM, `$1${MASK}`)
    .replace(AUTH_SCHEME, `$1 ${MASK}`)
    .replace(SECRET_PAIR, `$1${MASK}`)
    .replace(OPAQUE, MASK);
}
