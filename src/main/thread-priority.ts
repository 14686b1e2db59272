// Lower the scheduling priority of the calling thread alone (Linux: a thread's nice value and
// scheduling policy are its own). serve's workers thread does this so that, when the cores are
// busy, the kernel runs the HTTP ingress on the main thread first: an ack is a few hundred
// microseconds of CPU that a client waits for, a turn is background work that only finishes a
// little later.
import { execFile, execFileSync } from "node:child_process";
import { readFileSync, readlinkSync } from "node:fs";
import { getPriority, setPriority } from "node:os";
import type { HoldingPriority } from "../state/write-gate.js";

const MAX_NICE = 19;
/** Linux's policies, as /proc/<pid>/task/<tid>/stat reports a thread's. */
export const SCHED_OTHER = 0;
export const SCHED_FIFO = 1;
export const SCHED_IDLE = 5;
/** chrt (util-linux) asks the kernel for a policy; Node has no call of its own for it. */
const SET_POLICY_TIMEOUT_MS = 2_000;

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

/** This thread's nice value, or null where it cannot be read. */
export function thisThreadNice(): number | null {
  const tid = kernelThreadId();
  if (tid === null) return null;
  try {
    return getPriority(tid);
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

/**
 * Around its write-gate holds, a thread lowered to `loweredNice` goes back to `normalNice` (the
 * HTTP thread's) and down again after: two setpriority calls of about a microsecond each. Going
 * back up needs CAP_SYS_NICE or an RLIMIT_NICE that allows it (`ulimit -e`, systemd's LimitNICE);
 * null where the kernel refuses, tried once here.
 */
export function gateHoldPriority(normalNice: number, loweredNice: number): HoldingPriority | null {
  const tid = kernelThreadId();
  if (tid === null || loweredNice <= normalNice) return null;
  try {
    setPriority(tid, normalNice);
    setPriority(tid, loweredNice);
  } catch {
    return null;
  }
  // Never throws: a hold must not fail (or keep the gate) because a priority could not be set.
  const set = (nice: number): void => {
    try {
      setPriority(tid, nice);
    } catch {
      // the thread keeps the priority it has
    }
  };
  return { raise: () => set(normalNice), lower: () => set(loweredNice) };
}

/** A thread's scheduling policy (SCHED_OTHER 0, SCHED_BATCH 3, SCHED_IDLE 5...), or null when unreadable. */
export function schedulingPolicyOf(pid: number, tid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
    // Fields after the command name (which may hold spaces), from field 3 on: policy is field 41.
    const policy = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[38]);
    return Number.isInteger(policy) ? policy : null;
  } catch {
    return null;
  }
}

/**
 * Put this thread under SCHED_IDLE: it runs on a core no other thread wants, and a thread of the
 * normal policy that wakes (the HTTP thread with a request to answer) takes the core from it at
 * once, where a lower nice value only gives it a smaller share and it waits for the running
 * slice to end. Any thread may lower itself to it. True when the kernel reports the policy set;
 * false where it could not be (not Linux, no chrt).
 */
export function idleThisThread(): boolean {
  const tid = kernelThreadId();
  if (tid === null) return false;
  try {
    execFileSync("chrt", ["--idle", "--pid", "0", String(tid)], { stdio: "ignore", timeout: SET_POLICY_TIMEOUT_MS });
  } catch {
    return false;
  }
  return schedulingPolicyOf(process.pid, tid) === SCHED_IDLE;
}

/** The real-time priority the HTTP thread asks for: the lowest, which is enough to run ahead of every normal thread. */
export const INGRESS_REALTIME_PRIORITY = 1;

/**
 * Put this thread under SCHED_FIFO at the ingress priority, without blocking its event loop: it
 * takes a core from any thread of the normal policy (the turns, other processes) the moment it is
 * runnable, where a nice value only weighs its share. The kernel's real-time throttling still leaves
 * the normal threads a twentieth of every core. With reset-on-fork: a thread it starts later (the
 * workers thread after a restart, libuv's pool) begins under the normal policy, not this one.
 * Resolves to whether the kernel reports the policy set: false where it could not be (not Linux,
 * no chrt, no CAP_SYS_NICE or RLIMIT_RTPRIO).
 */
export function realtimeThisThread(): Promise<boolean> {
  const tid = kernelThreadId();
  if (tid === null) return Promise.resolve(false);
  return new Promise((resolve) => {
    execFile("chrt", realtimeArgs(tid), { timeout: SET_POLICY_TIMEOUT_MS }, (err) => resolve(!err && schedulingPolicyOf(process.pid, tid) === SCHED_FIFO));
  });
}

/** chrt's arguments that put thread `tid` under SCHED_FIFO at the ingress priority, with reset-on-fork. */
export function realtimeArgs(tid: number): string[] {
  return ["--fifo", "--reset-on-fork", "--pid", String(INGRESS_REALTIME_PRIORITY), String(tid)];
}
