// Small helpers that make waits end the moment a signal is aborted.
import { ProviderAbortError } from "./errors.js";

export function throwIfAborted(signal: AbortSignal): void {
  if (signal.aborted) throw new ProviderAbortError({ cause: signal.reason });
}

/**
 * Settles with `promise`, or rejects with a ProviderAbortError as soon as `signal` aborts.
 * The losing promise keeps its handlers, so its late rejection is never unhandled.
 */
export function abortable<T>(promise: PromiseLike<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    Promise.resolve(promise).catch(() => {});
    return Promise.reject(new ProviderAbortError({ cause: signal.reason }));
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(new ProviderAbortError({ cause: signal.reason }));
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(err);
      },
    );
  });
}

/** Waits `ms`, or rejects with a ProviderAbortError as soon as `signal` aborts. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const wait = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  return abortable(wait, signal).finally(() => clearTimeout(timer));
}
