import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/global-setup.ts"],
    // The gateways the suite starts share the cores with its own forks, which run at full tilt:
    // 19 nice steps down (the workers thread's default) their turns would get a sliver of a core,
    // so the suite's run 10 down. test/main/workers-thread.test.ts starts one with the default.
    env: { WORKERS_THREAD_SCHEDULING: "nice", WORKERS_THREAD_NICE: "10" },
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Tests spawn real processes and servers; two cores do not gain from more forks.
    pool: "forks",
    maxWorkers: 2,
    // The JSON report feeds the one-line summary CI prints ("N passed, N failed").
    reporters: ["default", ["json", { outputFile: "test-output/vitest-report.json" }]],
  },
});
