// The ingress benchmark's machine figures: the whole machine's busy share between two readings of
// /proc/stat, a process's CPU from /proc/<pid>/stat, and a thread's wait for a core from
// /proc/<pid>/task/<tid>/schedstat.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { busyPercent, readCoreWaitMs, readCpuMs, readMachineCpu } from "../../bench/lib/proc.js";

const hasTaskset = spawnSync("taskset", ["--version"], { stdio: "ignore" }).status === 0;

/** A node process that spins until killed, held to the first core. */
function spinnerOnCoreZero(): ChildProcess {
  return spawn("taskset", ["-c", "0", process.execPath, "-e", "for (;;) Math.sqrt(Math.random())"], { stdio: "ignore" });
}

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
    // The machine's busy ticks include this process's 200 ms (ticks are 10 ms, 100 a second). The
    // two counts are rounded to ticks apart, so the machine's may read a tick or two short (19 of 20 did).
    expect(after.busy - before.busy).toBeGreaterThanOrEqual(18);
  }, 15_000);

  it("computes the share from the ticks and says NaN when no time passed", () => {
    expect(busyPercent({ busy: 100, total: 1000 }, { busy: 250, total: 1200 })).toBe(75);
    expect(busyPercent({ busy: 5, total: 10 }, { busy: 5, total: 10 })).toBeNaN();
  });
});

describe("a thread's wait for a core", () => {
  it.skipIf(!hasTaskset)("grows faster than the CPU time of each of three spinners held to one core, and barely for a sleeper", async () => {
    // taskset execs node in place: the child's pid is node's.
    const spinners = [spinnerOnCoreZero(), spinnerOnCoreZero(), spinnerOnCoreZero()];
    const sleeper = spawn(process.execPath, ["-e", "process.stdout.write('ready\\n'); setTimeout(() => {}, 5000)"], { stdio: ["ignore", "pipe", "ignore"] });
    const pids = [...spinners, sleeper].map((child) => child.pid as number);
    try {
      // Counted after start-up, which waits for a core like any other work on a busy machine: the
      // sleeper's own start-up took 85 ms of waiting past a fixed 300 ms once, with tests running beside it.
      await Promise.all([sleep(300), once(sleeper.stdout as NodeJS.ReadableStream, "data")]);
      await sleep(100);
      const before = pids.map((pid) => ({ waited: readCoreWaitMs(pid), ran: readCpuMs(pid) }));
      await sleep(700);
      const after = pids.map((pid) => ({ waited: readCoreWaitMs(pid), ran: readCpuMs(pid) }));
      const grown = after.map((a, i) => ({ waited: a.waited - before[i].waited, ran: a.ran - before[i].ran }));
      // Three on one core: each runs about a third of the time and waits about two thirds, twice
      // as long (longer still when other work shares the core).
      for (const spinner of grown.slice(0, 3)) {
        expect(spinner.ran).toBeGreaterThan(30);
        expect(spinner.waited).toBeGreaterThan(1.5 * spinner.ran);
      }
      const sleeping = grown[3];
      expect(sleeping.waited).toBeGreaterThanOrEqual(0);
      expect(sleeping.waited).toBeLessThan(20);
    } finally {
      for (const child of [...spinners, sleeper]) {
        child.kill("SIGKILL");
        if (child.exitCode === null && child.signalCode === null) await once(child, "exit");
      }
    }
  }, 15_000);

  it("is NaN for a process that does not exist", () => {
    expect(readCoreWaitMs(2 ** 22 + 1)).toBeNaN();
  });
});
