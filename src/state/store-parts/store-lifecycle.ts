// StoreLifecycle: what the process that opened a store does with it as a whole.

/** The end of a store's life: pending waiters are woken (and reject), connections close. */
export interface StoreLifecycle {
  close(): Promise<void>;
}
