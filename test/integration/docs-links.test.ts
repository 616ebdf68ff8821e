import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { expect, it } from "vitest";
import { testStore } from "../support/database.js";

const repo = resolve(import.meta.dirname, "../..");
/** Folders that hold no docs of the repository: dependencies, build output, local data. */
const SKIP = new Set([
  "node_modules",
  ".git",
  "dist",
  "data",
  "coverage",
  "test-results",
  "results",
]);

/** Every Markdown file of the repository, as a path from its root. */
function markdownFiles(dir = repo): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (SKIP.has(entry.name)) return [];
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return markdownFiles(path);
    return entry.name.endsWith(".md") ? [relative(repo, path)] : [];
  });
}
const docs = markdownFiles();

/** Headings of a Markdown file as GitHub makes their anchors. */
function anchors(text: string): Set<string> {
  return new Set(
    [...text.matchAll(/^#+ (.+)$/gm)].map((m) =>
      (m[1] ?? "")
        .toLowerCase()
        .replace(/[^\p{L}\p{N} _-]/gu, "")
        .replace(/ /g, "-"),
    ),
  );
}

// Files only: the same in both store runs.
it.skipIf(testStore() === "mysql")(
  "every relative link of every Markdown file works in a clone: its target is a file of the repository (or an anchor in it)",
  () => {
    expect(docs).toEqual(expect.arrayContaining(["README.md", "examples/client/README.md"]));
    const broken: string[] = [];
    for (const doc of docs) {
      const text = readFileSync(join(repo, doc), "utf8");
      for (const [, target = ""] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/i.test(target)) continue; // absolute URLs (none point outside on purpose)
        const [path = "", anchor] = target.split("#");
        const file = path === "" ? join(repo, doc) : resolve(dirname(join(repo, doc)), path);
        if (relative(repo, file).startsWith("..") || !existsSync(file)) {
          broken.push(`${doc}: ${target}`);
        } else if (
          anchor &&
          file.endsWith(".md") &&
          !anchors(readFileSync(file, "utf8")).has(anchor)
        ) {
          broken.push(`${doc}: ${target} (no such heading)`);
        }
      }
      // Paths written as code that leave the repository help nobody with a clone.
      for (const [span] of text.matchAll(/`\.\.\/[^`]*`/g)) broken.push(`${doc}: ${span}`);
    }
    expect(broken).toEqual([]);
  },
);
