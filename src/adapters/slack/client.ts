// Sending to Slack through the official WebClient, with its retries off so that a 429 surfaces
// at once as RateLimitedError (the deliveries queue owns retries and backoff).
import {
  LogLevel,
  WebAPIHTTPError,
  WebAPIPlatformError,
  WebAPIRateLimitedError,
  WebClient,
  type Logger as SlackLogger,
} from "@slack/web-api";
import type { Logger } from "pino";
import { secondsToMs } from "../../shared/retry-after.js";
import { createSlackFetch, SLACK_CALL_TIMEOUT_MS } from "./buffered-fetch.js";
import { PermanentSendError, RateLimitedError } from "../../gateway/types.js";

/** Slack error codes that no retry can fix. */
const PERMANENT_ERRORS = new Set([
  "account_inactive",
  "channel_not_found",
  "ekm_access_denied",
  "invalid_arguments",
  "invalid_auth",
  "invalid_blocks",
  "invalid_metadata_format",
  "is_archived",
  "missing_scope",
  "msg_too_long",
  "no_permission",
  "no_text",
  "not_allowed_token_type",
  "not_authed",
  "not_in_channel",
  "restricted_action",
  "team_access_not_granted",
  "token_expired",
  "token_revoked",
]);

/** chat.update errors after which the reply should be posted as a new message instead. */
export const UNEDITABLE_ERRORS = new Set(["message_not_found", "cant_update_message", "edit_window_closed"]);

export function createSlackWebClient(botToken: string, apiUrl: string, logger: Logger, timeoutMs: number = SLACK_CALL_TIMEOUT_MS): WebClient {
  return new WebClient(botToken, {
    slackApiUrl: apiUrl,
    rejectRateLimitedCalls: true,
    retryConfig: { retries: 0 },
    // The fetch's pool bounds each call instead (no AbortSignal.timeout per call).
    timeout: 0,
    logger: slackLoggerFor(logger),
    // Its requests through undici's request API, without a WHATWG stream per call.
    fetch: createSlackFetch(timeoutMs),
  });
}

/** Maps a WebClient failure onto the gateway's send errors. */
export function toSendError(error: unknown, method: string): Error {
  if (error instanceof WebAPIRateLimitedError) {
    return new RateLimitedError(secondsToMs(error.retryAfter) ?? 1000, `Slack ${method} rate limited; retry after ${error.retryAfter} s`);
  }
  if (error instanceof WebAPIPlatformError) {
    const code = error.data.error;
    if (code === "ratelimited") return new RateLimitedError(1000, `Slack ${method} rate limited`);
    if (PERMANENT_ERRORS.has(code) || UNEDITABLE_ERRORS.has(code)) {
      return new PermanentSendError(`Slack ${method} failed: ${code}`);
    }
    return new Error(`Slack ${method} failed: ${code}`);
  }
  if (error instanceof WebAPIHTTPError) {
    const status = error.statusCode;
    if (status >= 400 && status < 500 && status !== 408) {
      return new PermanentSendError(`Slack ${method} failed: HTTP ${status}`);
    }
    return new Error(`Slack ${method} failed: HTTP ${status}`);
  }
  return error instanceof Error ? error : new Error(String(error));
}

export function slackErrorCode(error: unknown): string | null {
  return error instanceof WebAPIPlatformError ? error.data.error : null;
}

/** The SDK clients log through our pino logger (they redact tokens themselves; we add nothing secret). */
export function slackLoggerFor(logger: Logger, component = "slack-web-api"): SlackLogger {
  const child = logger.child({ component });
  let level = LogLevel.WARN;
  const rank: Record<LogLevel, number> = {
    [LogLevel.DEBUG]: 0,
    [LogLevel.INFO]: 1,
    [LogLevel.WARN]: 2,
    [LogLevel.ERROR]: 3,
  };
  const at = (wanted: LogLevel, write: (msg: string) => void) => (...msg: unknown[]) => {
    if (rank[wanted] >= rank[level]) write(msg.map(String).join(" "));
  };
  return {
    debug: at(LogLevel.DEBUG, (m) => child.debug(m)),
    info: at(LogLevel.INFO, (m) => child.info(m)),
    warn: at(LogLevel.WARN, (m) => child.warn(m)),
    error: at(LogLevel.ERROR, (m) => child.error(m)),
    setLevel: (next: LogLevel) => {
      level = next;
    },
    getLevel: () => level,
    setName: () => undefined,
  };
}
