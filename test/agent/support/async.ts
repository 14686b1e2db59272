// Small promise helpers for tests: a settable latch and bounded waits.

export interface Latch<T = void> {
  promise: Promise<T>;
  resolve: (value: T) => void;
  readonly settled: boolean;
}

export function latch<T = void>(): Latch<T> {
  let resolve!: (value: T) => void;
  let settled = false;
  const promise = new Promise<T>((r) => {
    resolve = (value) => {
      settled = true;
      r(value);
    };
  });
  return {
    promise,
    resolve: (value) => resolve(value),
    get settled() {
      return settled;
    },
  };
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Resolves true when `promise` settles within `ms`, false otherwise. */
export async function within(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([promise.then(() => true as const), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Resolves once `check` is true, looking every 5 ms; rejects after `timeoutMs`. */
export async function until(check: () => boolean, timeoutMs = 5_000, what = "condition"): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}
