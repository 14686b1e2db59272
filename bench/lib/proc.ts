// Resident memory of another process, from /proc (Linux).
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
