import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { StartupError } from "./startup-errors.js";

/**
 * What the service needs of the patches in `patches/` (patch-package's
 * format): each file a patch changes holds every line the patch adds. An
 * install with its scripts off (`npm ci --ignore-scripts`) skips them
 * silently, and the service would run without them: the Connect patch
 * answers an unparsable message with invalid_argument, not internal.
 * Returns the patches not applied, each named with a file it misses.
 */
export function unappliedPatches(root: string): string[] {
  const dir = join(root, "patches");
  if (!existsSync(dir)) return [];
  const missing: string[] = [];
  for (const name of readdirSync(dir)
    .filter((f) => f.endsWith(".patch"))
    .sort()) {
    const file = unappliedFile(root, readFileSync(join(dir, name), "utf8"));
    if (file !== undefined) missing.push(`patches/${name} (${file})`);
  }
  return missing;
}

/** The first file of `patch` that lacks a line the patch adds, if any. */
function unappliedFile(root: string, patch: string): string | undefined {
  // "diff --git a/PATH b/PATH", then hunks whose added lines start with "+".
  for (const section of patch.split(/^diff --git /m).slice(1)) {
    const path = /^a\/(\S+) b\//.exec(section)?.[1];
    if (path === undefined) continue;
    const target = join(root, path);
    if (!existsSync(target)) return path;
    const text = readFileSync(target, "utf8");
    const added = section
      .split("\n")
      .filter((l) => l.startsWith("+") && !l.startsWith("+++"))
      .map((l) => l.slice(1))
      .filter((l) => l.trim() !== "");
    if (added.some((line) => !text.includes(line))) return path;
  }
  return undefined;
}

/** Stops the start with one line when a patch is not applied. */
export function requirePatches(root: string): void {
  const missing = unappliedPatches(root);
  if (missing.length > 0) {
    throw new StartupError(
      `not applied to node_modules: ${missing.join(", ")}; run: npx patch-package --error-on-fail`,
    );
  }
}

/** The folder holding package.json above this module (src/ or dist/src/). */
export function projectRoot(from: string = fileURLToPath(import.meta.url)): string {
  let dir = dirname(from);
  while (!existsSync(join(dir, "package.json"))) {
    const up = dirname(dir);
    if (up === dir) throw new Error("no package.json above the service's modules");
    dir = up;
  }
  return dir;
}
