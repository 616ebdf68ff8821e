import { configDefaults, defineConfig } from "vitest/config";
import { mysqlAnswers, testServerUrl } from "./test/support/database.js";
import { SummaryReporter } from "./test/support/summary-reporter.js";

/**
 * Unit tests once; the integration suite once per store: SQLite always,
 * MySQL/MariaDB when one answers at TEST_DATABASE_URL (default local root).
 * In CI (CI=true) a missing MySQL fails the run instead of skipping it.
 */
export default defineConfig(async () => {
  const url = testServerUrl();
  // Workers load this file again: check once, hand the answer down by env.
  process.env.TEST_MYSQL_ERROR ??= (await mysqlAnswers(url)) ?? "";
  const mysqlError = process.env.TEST_MYSQL_ERROR || undefined;
  if (mysqlError && process.env.CI) {
    throw new Error(`CI needs MySQL/MariaDB at ${url}: ${mysqlError}`);
  }
  const skippedNote = mysqlError
    ? `MySQL run SKIPPED: no MySQL/MariaDB at ${url} (${mysqlError}). Only SQLite was tested; set TEST_DATABASE_URL to run both.`
    : undefined;
  // Vitest loads this file once per project too: warn once.
  if (skippedNote && !process.env.TEST_MYSQL_WARNED) {
    process.env.TEST_MYSQL_WARNED = "1";
    console.warn(skippedNote);
  }

  // Files that need a module cache of their own: vi.mock("fastify") only
  // takes if no earlier file of the worker has loaded Fastify.
  const ownModules = ["test/integration/openapi.test.ts"];
  const integration = (store: "sqlite" | "mysql") => [
    {
      extends: true as const,
      test: {
        name: store,
        include: ["test/**/*.test.ts"],
        // The browser test runs on its own: npm run test:browser (vitest.browser.config.ts).
        exclude: [...configDefaults.exclude, "test/browser/**", ...ownModules],
        env: { TEST_STORE: store },
      },
    },
    {
      extends: true as const,
      test: {
        name: `${store} (own modules)`,
        include: ownModules,
        isolate: true,
        env: { TEST_STORE: store },
      },
    },
  ];
  return {
    test: {
      // Each integration file makes its own database and server; two cores here.
      pool: "forks",
      maxWorkers: 2,
      // Workers keep modules between files, so the service's module graph loads
      // once per worker; a file that must not share module state is in ownModules.
      isolate: false,
      testTimeout: 30_000,
      hookTimeout: 60_000,
      reporters: ["default", new SummaryReporter(skippedNote)],
      projects: [
        { extends: true as const, test: { name: "unit", include: ["src/**/*.test.ts"] } },
        ...integration("sqlite"),
        ...(mysqlError ? [] : integration("mysql")),
      ],
    },
  };
});
