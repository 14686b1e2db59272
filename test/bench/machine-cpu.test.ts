// The ingress benchmark's machine figures: the whole machine's busy share between two readings of
// /proc/stat, and a process's CPU from /proc/<pid>/stat.
import { describe, expect, it } from "vitest";
import { busyPercent, readCpuMs, readMachineCpu } from "../../bench/lib/proc.js";

function spin(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) Math.sqrt(Math.random());
}

describe("the machine's CPU readings", () => {
  it("counts a busy loop of this process as busy time, between 0 and 100% of the machine", () => {
    const before = readMachineCpu();
    const cpuBefore = readCpuMs(process.pid);
    spin(300);
    const after = readMachineCpu();
    const cpuAfter = readCpuMs(process.pid);
    expect(after.total).toBeGreaterThan(before.total);
    expect(after.busy).toBeGreaterThan(before.busy);
    const busy = busyPercent(before, after);
    expect(busy).toBeGreaterThan(0);
    expect(busy).toBeLessThanOrEqual(100);
    // This process alone spun for 300 ms (ticks are 10 ms).
    expect(cpuAfter - cpuBefore).toBeGreaterThanOrEqual(200);
  });

  it("computes the share from the ticks and says NaN when no time passed", () => {
    expect(busyPercent({ busy: 100, total: 1000 }, { busy: 250, total: 1200 })).toBe(75);
    expect(busyPercent({ busy: 5, total: 10 }, { busy: 5, total: 10 })).toBeNaN();
  });
});
