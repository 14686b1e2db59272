// Helpers that let an interrupt end a wait at once, whatever the awaited work does.

export type Raced<T> = { aborted: false; value: T } | { aborted: true };

/**
 * Settles with `work`, or with {aborted: true} as soon as `signal` aborts. The losing promise
 * keeps a handler, so its late rejection is never unhandled.
 */
export function raceAbort<T>(work: Promise<T>, signal: AbortSignal): Promise<Raced<T>> {
  work.catch(() => {});
  if (signal.aborted) return Promise.resolve({ aborted: true });
  return new Promise<Raced<T>>((resolve, reject) => {
    const onAbort = (): void => resolve({ aborted: true });
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve({ aborted: false, value });
      },
      (err: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(err);
      },
    );
  });
}

/** True for an AbortError from any source (fetch, the openai client, our providers). */
export function isAbortLike(err: unknown): boolean {
  return typeof err === "object" && err !== null && (err as { name?: unknown }).name === "AbortError";
}

/** Resolves after `ms`, or earlier when `signal` aborts; never rejects. */
export function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}
