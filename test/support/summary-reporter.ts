import type { Reporter, TestModule } from "vitest/node";

/**
 * Closes the run with one plain line, "vitest: N passed, N failed, N skipped",
 * and says so when the MySQL run was skipped, so that a reader (or CI) never
 * mistakes a SQLite-only run for a full one.
 */
export class SummaryReporter implements Reporter {
  constructor(private readonly skippedNote: string | undefined) {}

  onTestRunEnd(modules: ReadonlyArray<TestModule>) {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    for (const module of modules) {
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === "passed") passed++;
        else if (state === "failed") failed++;
        else skipped++;
      }
    }
    if (this.skippedNote) console.log(`\n${this.skippedNote}`);
    console.log(`\nvitest: ${passed} passed, ${failed} failed, ${skipped} skipped`);
  }
}
