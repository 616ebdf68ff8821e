import { defineConfig } from "vitest/config";

/**
 * `npm run test:chaos`: the slow reliability runs (test/chaos/*.chaos.ts),
 * kept out of `npm test`. One file at a time, so each one has the machine's
 * cores and its figures mean something.
 */
export default defineConfig({
  test: {
    include: ["test/chaos/**/*.chaos.ts"],
    pool: "forks",
    maxWorkers: 1,
    testTimeout: 180_000,
    hookTimeout: 60_000,
    globalSetup: ["test/support/global-setup.ts"],
  },
});
