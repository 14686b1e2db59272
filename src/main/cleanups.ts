// Start-up and shutdown mirror each other: every start-up step adds what undoes it, and stopping
// (or a start-up that fails half way) runs those newest first, so a part stops before the parts
// it uses.
import type { Logger } from "pino";

/** What undoes one start-up step. */
export type Cleanup = () => Promise<void> | void;
export type Cleanups = Cleanup[];

/** Runs the cleanups newest first and empties the list; one that fails is logged, the rest still run. */
export async function runCleanups(cleanups: Cleanups, logger: Logger): Promise<void> {
  for (const fn of cleanups.reverse()) {
    try {
      await fn();
    } catch (err) {
      logger.warn({ err: (err as Error).message }, "shutdown step failed");
    }
  }
  cleanups.length = 0;
}
