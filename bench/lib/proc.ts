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
