// The openai client's errors as ProviderErrors: only the OpenAI-compatible provider loads this
// (and the client with it).
import { APIConnectionError, APIError, OpenAIError } from "openai";
import { isRetryableStatus, ProviderError } from "./errors.js";
import { retryAfterMsFrom } from "../../shared/retry-after.js";

/** Maps whatever the client or the stream threw to a ProviderError. */
export function toProviderError(err: unknown): ProviderError {
  if (err instanceof ProviderError) return err;
  if (err instanceof APIConnectionError) {
    return new ProviderError(err.message, { retryable: true, code: "connection_error", cause: err });
  }
  if (err instanceof APIError) {
    const status = typeof err.status === "number" ? err.status : undefined;
    return new ProviderError(err.message, {
      status,
      // An error event inside a stream has no status: retry only server-side failures.
      retryable: status !== undefined ? isRetryableStatus(status) : err.type === "server_error",
      code: err.code ?? undefined,
      type: err.type,
      retryAfterMs: err.headers ? retryAfterMsFrom(err.headers) : undefined,
      cause: err,
    });
  }
  if (err instanceof OpenAIError) {
    return new ProviderError(err.message, { retryable: false, cause: err });
  }
  // fetch's own failures while reading a stream body (e.g. "terminated" when the socket drops).
  const message = err instanceof Error ? err.message : String(err);
  return new ProviderError(`model server connection failed: ${message}`, {
    retryable: true,
    code: "connection_error",
    cause: err,
  });
}
