// The two ways a model call fails: the caller aborted it, or the model server failed it. Free of
// the openai client (its errors are mapped in openai-errors.ts), so the echo model never loads it.

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

/**
 * True for any abort: ours, or a fetch/DOM AbortError. Timeouts are not aborts. (The openai
 * client's own abort error never leaves OpenAIProvider: it becomes a ProviderAbortError.)
 */
export function isAbortError(err: unknown): boolean {
  if (err instanceof ProviderAbortError) return true;
  return typeof err === "object" && err !== null && (err as { name?: unknown }).name === "AbortError";
}

/** Statuses worth trying again later; the same set the openai client retries on. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}
