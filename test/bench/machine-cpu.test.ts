// The ingress benchmark's machine figures: the whole machine's busy share between two readings of
// /proc/stat, and a process's CPU from /proc/<pid>/stat.
import { describe, expect, it } from "vitest";
import { busyPercent, readCpuMs, readMachineCpu } from "../../bench/lib/proc.js";

/** Spin until this process has used `ms` more of CPU (by /proc), or give up after `limitMs` of wall time. */
function spinCpu(ms: number, limitMs: number): number {
  const start = readCpuMs(process.pid);
  const giveUpAt = performance.now() + limitMs;
  let used = 0;
  while (performance.now() < giveUpAt) {
    for (let i = 0; i < 100_000; i++) Math.sqrt(Math.random());
    used = readCpuMs(process.pid) - start;
    if (used >= ms) break;
  }
  return used;
}

describe("the machine's CPU readings", () => {
  it("counts a busy loop of this process as busy time, between 0 and 100% of the machine", () => {
    const before = readMachineCpu();
    // CPU time, not wall time: on a loaded machine (tests run side by side) a wall-clock spin may get little of a core.
    const used = spinCpu(200, 10_000);
    const after = readMachineCpu();
    expect(used).toBeGreaterThanOrEqual(200);
    expect(after.total).toBeGreaterThan(before.total);
    expect(after.busy).toBeGreaterThan(before.busy);
    const busy = busyPercent(before, after);
    expect(busy).toBeGreaterThan(0);
    expect(busy).toBeLessThanOrEqual(100);
    // The machine's busy ticks include this process's 200 ms (ticks are 10 ms, 100 a second).
    expect(after.busy - before.busy).toBeGreaterThanOrEqual(20);
  }, 15_000);

  it("computes the share from the ticks and says NaN when no time passed", () => {
    expect(busyPercent({ busy: 100, total: 1000 }, { busy: 250, total: 1200 })).toBe(75);
    expect(busyPercent({ busy: 5, total: 10 }, { busy: 5, total: 10 })).toBeNaN();
  });
});
