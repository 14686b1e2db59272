// Resident memory, CPU time and run-queue waits of other processes, from /proc (Linux).
import { readFileSync } from "node:fs";

export interface MemoryReading {
  /** Current resident set, MiB. */
  rssMb: number;
  /** Peak resident set since the process started, MiB. */
  peakMb: number;
}

function field(status: string, name: string): number {
  const match = new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(status);
  return match ? Number(match[1]) / 1024 : Number.NaN;
}

export function readMemory(pid: number): MemoryReading {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    return { rssMb: field(status, "VmRSS"), peakMb: field(status, "VmHWM") };
  } catch {
    return { rssMb: Number.NaN, peakMb: Number.NaN };
  }
}

/** The soft limit on open files of this process (children inherit it); null when unknown. */
export function openFileLimit(): number | null {
  try {
    const limits = readFileSync("/proc/self/limits", "utf8");
    const match = /^Max open files\s+(\d+|unlimited)/m.exec(limits);
    if (!match) return null;
    return match[1] === "unlimited" ? Number.POSITIVE_INFINITY : Number(match[1]);
  } catch {
    return null;
  }
}

/** Linux reports process times in /proc in USER_HZ ticks, 100 per second on every mainstream architecture. */
const USER_HZ = 100;

/** CPU time (user + system, every thread) another process has used since it started, in ms; NaN when unknown. */
export function readCpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) may hold spaces: count fields after its closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const utime = Number(fields[11]);
    const stime = Number(fields[12]);
    return ((utime + stime) * 1000) / USER_HZ;
  } catch {
    return Number.NaN;
  }
}

/** The whole machine's CPU time from /proc/stat, in ticks: busy (everything but idle and I/O wait) and total. */
export interface MachineCpu {
  busy: number;
  total: number;
}

export function readMachineCpu(): MachineCpu {
  try {
    const fields = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).slice(1).map(Number);
    const total = fields.reduce((sum, n) => sum + n, 0);
    return { busy: total - fields[3] - fields[4], total };
  } catch {
    return { busy: Number.NaN, total: Number.NaN };
  }
}

/** The share of every core that was busy between two readings, in percent (NaN when unknown). */
export function busyPercent(before: MachineCpu, after: MachineCpu): number {
  const total = after.total - before.total;
  return total > 0 ? (100 * (after.busy - before.busy)) / total : Number.NaN;
}

/**
 * How long a process's main thread has waited on a run queue for a core since it started, in ms:
 * the second field of /proc/<pid>/task/<pid>/schedstat (nanoseconds). Runnable but not running:
 * what a busy machine adds to the work of a thread. NaN when unknown.
 */
export function readCoreWaitMs(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/task/${pid}/schedstat`, "utf8").trim().split(" ");
    return Number(fields[1]) / 1e6;
  } catch {
    return Number.NaN;
  }
}
