import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** Where runs are written: ignored by git, one Markdown and one JSON file per run. */
export const RESULTS_DIR = "bench/results";

/** Prints the report, and keeps it and its raw numbers under bench/results/. */
export function writeReport(name: string, markdown: string, raw: unknown): void {
  console.log(markdown);
  mkdirSync(RESULTS_DIR, { recursive: true });
  const base = join(RESULTS_DIR, `${name}-${new Date().toISOString().replace(/[:.]/g, "-")}`);
  writeFileSync(`${base}.md`, `${markdown}\n`);
  writeFileSync(`${base}.json`, `${JSON.stringify(raw, null, 2)}\n`);
  console.error(`written: ${base}.md`);
}
