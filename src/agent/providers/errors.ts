// The two ways a model call fails: the caller aborted it, or the model server failed it.
import { APIConnectionError, APIError, APIUserAbortError, OpenAIError } from "openai";
import { retryAfterMsFrom } from "./retry-after.js";

/** A model call stopped because the caller's signal was aborted (an interrupt). */
export class ProviderAbortError extends Error {
  override readonly name = "AbortError";
  constructor(options?: { cause?: unknown }) {
    super("The model call was aborted.", options);
  }
}

export interface ProviderErrorOptions {
  status?: number;
  /** True when the same request may succeed later (rate limit, overload, network, timeout). */
  retryable: boolean;
  code?: string;
  type?: string;
  /** How long the server asked us to wait, when it said so. */
  retryAfterMs?: number;
  cause?: unknown;
}

/** A model call that failed for good after the client's own retries. */
export class ProviderError extends Error {
  override readonly name = "ProviderError";
  readonly status?: number;
  readonly retryable: boolean;
  readonly code?: string;
  readonly type?: string;
  readonly retryAfterMs?: number;

  constructor(message: string, options: ProviderErrorOptions) {
    super(message, { cause: options.cause });
    this.status = options.status;
    this.retryable = options.retryable;
    this.code = options.code;
    this.type = options.type;
    this.retryAfterMs = options.retryAfterMs;
  }
}

/** True for any abort: ours, the openai client's, or a fetch/DOM AbortError. Timeouts are not aborts. */
export function isAbortError(err: unknown): boolean {
  if (err instanceof ProviderAbortError || err instanceof APIUserAbortError) return true;
  return typeof err === "object" && err !== null && (err as { name?: unknown }).name === "AbortError";
}

/** Statuses worth trying again later; the same set the openai client retries on. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

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
