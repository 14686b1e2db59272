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
    reporters: ["default"],
  },
});
