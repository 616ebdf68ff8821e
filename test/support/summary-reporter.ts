import { relative } from "node:path";
import type { Reporter, TestModule } from "vitest/node";

/** The store pass a project belongs to ("sqlite (own modules)" is the SQLite pass). */
function passOf(project: string): "sqlite" | "mysql" | undefined {
  if (project.startsWith("sqlite")) return "sqlite";
  if (project.startsWith("mysql")) return "mysql";
  return undefined;
}

/**
 * Closes the run with one plain line, "vitest: N passed, N failed, N skipped",
 * then why the skipped ones were: a test that does not depend on the store
 * runs in the SQLite pass only and is skipped in the MySQL one, a MySQL-only
 * test the other way round, and the rest (skipped in every pass they are in)
 * by file: a case that does not apply, or what this machine lacks. Says so when the MySQL run was
 * skipped, so that a reader (or CI) never mistakes a SQLite-only run for a full one.
 */
export class SummaryReporter implements Reporter {
  constructor(private readonly skippedNote: string | undefined) {}

  onTestRunEnd(modules: ReadonlyArray<TestModule>) {
    let passed = 0;
    let failed = 0;
    // Each test by file and name: which passes ran it, which skipped it.
    const ran = new Map<string, Set<string>>();
    const skipped: { key: string; pass: string | undefined; file: string }[] = [];
    for (const module of modules) {
      const file = relative(process.cwd(), module.moduleId);
      const pass = passOf(module.project.name);
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        const key = `${file} ${test.fullName}`;
        if (state === "passed" || state === "failed") {
          if (state === "passed") passed++;
          else failed++;
          if (pass) ran.set(key, new Set([...(ran.get(key) ?? []), pass]));
        } else {
          skipped.push({ key, pass, file });
        }
      }
    }
    let sqliteOnly = 0;
    let mysqlOnly = 0;
    const elsewhere = new Map<string, number>();
    for (const { key, pass, file } of skipped) {
      const other = pass === "mysql" ? "sqlite" : "mysql";
      if (pass && ran.get(key)?.has(other)) {
        if (pass === "mysql") sqliteOnly++;
        else mysqlOnly++;
      } else {
        elsewhere.set(file, (elsewhere.get(file) ?? 0) + 1);
      }
    }
    if (this.skippedNote) console.log(`\n${this.skippedNote}`);
    console.log(`\nvitest: ${passed} passed, ${failed} failed, ${skipped.length} skipped`);
    if (skipped.length === 0) return;
    const why = [
      sqliteOnly > 0 &&
        `${sqliteOnly} do not depend on the store: run in the SQLite pass, skipped in the MySQL one`,
      mysqlOnly > 0 &&
        `${mysqlOnly} are MySQL-only: run in the MySQL pass, skipped in the SQLite one`,
      elsewhere.size > 0 &&
        `${[...elsewhere.values()].reduce((a, b) => a + b, 0)} are skipped in every pass by ` +
          "their file's skipIf or runIf: a case that does not apply there (TLS only, say), or " +
          `what this machine lacks (MySQL, NATS, python3 grpcio): ` +
          [...elsewhere].map(([file, n]) => `${file} (${n})`).join(", "),
    ].filter((line): line is string => typeof line === "string");
    for (const line of why) console.log(`  ${line}`);
  }
}
