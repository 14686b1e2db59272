// Lowering a thread's priority changes that thread's nice value only, not the process's.
import { getPriority } from "node:os";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import { describe, expect, it } from "vitest";

const MODULE = join(import.meta.dirname, "..", "..", "src", "main", "thread-priority.ts");

describe.runIf(process.platform === "linux")("lowerThisThreadPriority", () => {
  it("raises the calling thread's nice value and leaves the main thread's alone", async () => {
    const before = getPriority();
    // A thread of its own (tsx compiles the module there as it does here).
    const worker = new Worker(
      `import("tsx/esm/api").then(({ tsImport }) => tsImport(${JSON.stringify(MODULE)}, "file://" + ${JSON.stringify(MODULE)}))
        .then(({ lowerThisThreadPriority }) => require("node:worker_threads").parentPort.postMessage(lowerThisThreadPriority(5)));`,
      { eval: true },
    );
    const nice = await new Promise<unknown>((resolve, reject) => {
      worker.once("message", resolve);
      worker.once("error", reject);
    });
    await worker.terminate();
    expect(nice).toBe(Math.min(19, before + 5));
    expect(getPriority()).toBe(before);
  });
});
