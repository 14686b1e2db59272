// Lower the scheduling priority of the calling thread alone (Linux: a thread's nice value is its
// own). serve's workers thread does this so that, when the cores are busy, the kernel runs the
// HTTP ingress on the main thread first: an ack is a few hundred microseconds of CPU that a client
// waits for, a turn is background work that only finishes a little later.
import { readlinkSync } from "node:fs";
import { getPriority, setPriority } from "node:os";

const MAX_NICE = 19;

/** The calling thread's kernel id, or null where /proc/thread-self does not exist (not Linux). */
function kernelThreadId(): number | null {
  try {
    // "<pid>/task/<tid>"
    const tid = Number(readlinkSync("/proc/thread-self").split("/").pop());
    return Number.isInteger(tid) && tid > 0 ? tid : null;
  } catch {
    return null;
  }
}

/** Raise this thread's nice value by `by` (capped at 19); the value it now has, or null when it could not. */
export function lowerThisThreadPriority(by: number): number | null {
  if (by <= 0) return null;
  const tid = kernelThreadId();
  if (tid === null) return null;
  try {
    const nice = Math.min(MAX_NICE, getPriority(tid) + by);
    setPriority(tid, nice);
    return nice;
  } catch {
    return null;
  }
}
