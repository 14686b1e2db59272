// The Bot API client: grammY's `Api` (typed methods, JSON bodies, `<apiRoot>/bot<token>/<method>`,
// errors that never carry the token), with failures mapped onto the gateway's send errors. No
// retries here: the deliveries ledger owns retries and Retry-After.
import { Api, GrammyError, HttpError } from "grammy";
import { PermanentSendError, RateLimitedError } from "../../gateway/types.js";
import { secondsToMs } from "../../shared/retry-after.js";

/** A Bot API call that hangs longer than this is abandoned (and retried by its caller). */
export const TELEGRAM_REQUEST_TIMEOUT_SECONDS = 75;

export function createTelegramApi(botToken: string, apiUrl: string): Api {
  return new Api(botToken, { apiRoot: apiUrl, timeoutSeconds: TELEGRAM_REQUEST_TIMEOUT_SECONDS });
}

/** The AbortSignal type grammY's Node typings name (the abort-controller polyfill's). */
type GrammySignal = NonNullable<Parameters<Api["getUpdates"]>[1]>;

/**
 * A native AbortSignal for grammY calls. Its Node typings name the polyfill's class, but at run
 * time it only listens for "abort" (and reads `aborted`), which the native signal does the same.
 */
export function grammySignal(signal: AbortSignal): GrammySignal {
  return signal as unknown as GrammySignal;
}

/** Telegram's error code, or null for a failure that is not an API answer (network, timeout). */
export function telegramErrorCode(error: unknown): number | null {
  return error instanceof GrammyError ? error.error_code : null;
}

/** The text Telegram gave with the error (lower case), or "". */
export function telegramDescription(error: unknown): string {
  return error instanceof GrammyError ? error.description.toLowerCase() : "";
}

/** A 429's `parameters.retry_after` in milliseconds, or null. */
export function retryAfterMs(error: unknown): number | null {
  return error instanceof GrammyError ? secondsToMs(error.parameters.retry_after) : null;
}

/** "Bad Request: message is not modified": the edit asked for the text it already shows. */
export function isNotModified(error: unknown): boolean {
  return telegramErrorCode(error) === 400 && telegramDescription(error).includes("message is not modified");
}

/** The message to edit is gone or can no longer be edited: post the text anew instead. */
export function isUneditable(error: unknown): boolean {
  if (telegramErrorCode(error) !== 400) return false;
  const description = telegramDescription(error);
  return description.includes("message to edit not found") || description.includes("message can't be edited");
}

/** Maps a failed call onto RateLimitedError (429), PermanentSendError (other 4xx) or a retryable Error. */
export function toSendError(error: unknown, method: string): Error {
  if (error instanceof GrammyError) {
    const label = `Telegram ${method} failed: ${error.error_code} ${error.description}`;
    if (error.error_code === 429) return new RateLimitedError(retryAfterMs(error) ?? 1000, label);
    if (error.error_code >= 400 && error.error_code < 500) return new PermanentSendError(label);
    return new Error(label);
  }
  if (error instanceof HttpError) return new Error(`Telegram ${method} request failed: ${error.message}`);
  return error instanceof Error ? error : new Error(String(error));
}

/** Runs one Bot API call and maps its failure. */
export async function call<T>(method: string, request: () => Promise<T>): Promise<T> {
  try {
    return await request();
  } catch (error) {
    throw toSendError(error, method);
  }
}
