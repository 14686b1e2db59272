// Lowering a thread's priority changes that thread's nice value or policy only, not the process's.
import { getPriority } from "node:os";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import { describe, expect, it } from "vitest";
import { SCHED_IDLE, SCHED_OTHER, schedulingPolicyOf } from "../../src/main/thread-priority.js";

const MODULE = join(import.meta.dirname, "..", "..", "src", "main", "thread-priority.ts");

/** Run `call` (an expression over the module's exports) in a thread of its own; what it posts back. */
async function inThread(call: string): Promise<unknown> {
  // tsx compiles the module in the thread as it does here.
  const worker = new Worker(
    `import("tsx/esm/api").then(({ tsImport }) => tsImport(${JSON.stringify(MODULE)}, "file://" + ${JSON.stringify(MODULE)}))
      .then((m) => {
        const tid = Number(require("node:fs").readlinkSync("/proc/thread-self").split("/").pop());
        require("node:worker_threads").parentPort.postMessage({ result: (${call})(m), policy: m.schedulingPolicyOf(process.pid, tid) });
      });`,
    { eval: true },
  );
  try {
    return await new Promise<unknown>((resolve, reject) => {
      worker.once("message", resolve);
      worker.once("error", reject);
    });
  } finally {
    await worker.terminate();
  }
}

describe.runIf(process.platform === "linux")("thread priority", () => {
  it("lowerThisThreadPriority raises the calling thread's nice value and leaves the main thread's alone", async () => {
    const before = getPriority();
    const answer = (await inThread("(m) => m.lowerThisThreadPriority(5)")) as { result: number; policy: number };
    expect(answer.result).toBe(Math.min(19, before + 5));
    expect(answer.policy).toBe(SCHED_OTHER);
    expect(getPriority()).toBe(before);
  });

  it("idleThisThread puts the calling thread under SCHED_IDLE and leaves the main thread's policy alone", async () => {
    expect(schedulingPolicyOf(process.pid, process.pid)).toBe(SCHED_OTHER);
    const answer = (await inThread("(m) => m.idleThisThread()")) as { result: boolean; policy: number };
    expect(answer).toEqual({ result: true, policy: SCHED_IDLE });
    expect(schedulingPolicyOf(process.pid, process.pid)).toBe(SCHED_OTHER);
  });

  it("gateHoldPriority puts a lowered thread back at its normal nice value while it holds a write gate, where the kernel lets it", async () => {
    const before = getPriority();
    const answer = (await inThread(`(m) => {
      const normal = m.thisThreadNice();
      const lowered = m.lowerThisThreadPriority(7);
      const hold = m.gateHoldPriority(normal, lowered);
      if (!hold) return null;
      hold.raise();
      const holding = m.thisThreadNice();
      hold.lower();
      return { normal, lowered, holding, after: m.thisThreadNice() };
    }`)) as { result: { normal: number; lowered: number; holding: number; after: number } | null };
    // Going back up needs CAP_SYS_NICE (root has it) or a high enough RLIMIT_NICE.
    if (answer.result === null) expect(process.getuid?.()).not.toBe(0);
    else expect(answer.result).toEqual({ normal: before, lowered: Math.min(19, before + 7), holding: before, after: Math.min(19, before + 7) });
    expect(getPriority()).toBe(before);
  });

  it("reads no policy for a thread that does not exist", () => {
    expect(schedulingPolicyOf(process.pid, 2 ** 30)).toBeNull();
  });
});
