import { defineConfig } from "vitest/config";
import { mysqlAnswers, testServerUrl } from "./test/support/database.js";

/**
 * `npm run test:chaos`: the slow reliability runs (test/chaos/*.chaos.ts),
 * kept out of `npm test`, on MySQL/MariaDB (they cut and stall its
 * connections). One file at a time, so the files do not compete for the CPU.
 */
export default defineConfig(async () => {
  const error = await mysqlAnswers(testServerUrl());
  if (error) throw new Error(`test:chaos needs MySQL/MariaDB at ${testServerUrl()}: ${error}`);
  return {
    test: {
      include: ["test/chaos/**/*.chaos.ts"],
      // Every file reports what it measured (test/support/reliability.ts reportFigures).
      env: { TEST_STORE: "mysql", TEST_FIGURES: process.env.TEST_FIGURES ?? "1" },
      pool: "forks" as const,
      maxWorkers: 1,
      testTimeout: 180_000,
      hookTimeout: 60_000,
    },
  };
});
