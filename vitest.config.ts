import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Tests spawn real processes and servers; two cores do not gain from more forks.
    pool: "forks",
    maxWorkers: 2,
    // The JSON report feeds the one-line summary CI prints ("N passed, N failed").
    reporters: ["default", ["json", { outputFile: "test-output/vitest-report.json" }]],
  },
});
