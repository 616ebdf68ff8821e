import { existsSync } from "node:fs";
import { readdir, stat } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository: the nearest folder with a package.json, from src/web or from dist/src/web. */
const ROOT = projectRoot(dirname(fileURLToPath(import.meta.url)));
/** The page's sources, and where `vite build` writes it (git-ignored). */
const PAGE_SOURCE = join(ROOT, "examples/web");
export const PAGE_DIST = join(PAGE_SOURCE, "dist");
/** The generated code the page imports: a change there changes the page too. */
const GENERATED = join(ROOT, "gen/practice");

/** What `ensurePracticePage` did. */
export type PageBuild = "built" | "up to date" | "prebuilt";

/**
 * Builds `examples/web/dist` with Vite when it is missing or older than a
 * source, so `npm start` is enough. Without Vite (a production image) an
 * existing build is used, and a missing one throws naming the command.
 */
export async function ensurePracticePage(): Promise<PageBuild> {
  const built = await mtime(join(PAGE_DIST, "index.html"));
  let vite: typeof import("vite");
  try {
    vite = await import("vite");
  } catch {
    if (built !== undefined) return "prebuilt";
    throw new Error(
      "PRACTICE_PAGE is on but the page is not built and Vite is not installed: " +
        "run `npm run web:build` where the devDependencies are, or set PRACTICE_PAGE=off",
    );
  }
  const newest = Math.max(
    await newestIn(PAGE_SOURCE, (path) => !path.startsWith(PAGE_DIST)),
    await newestIn(GENERATED, () => true),
  );
  if (built !== undefined && built >= newest) return "up to date";
  await vite.build({
    configFile: join(PAGE_SOURCE, "vite.config.ts"),
    mode: "production",
    logLevel: "warn",
  });
  return "built";
}

async function mtime(path: string): Promise<number | undefined> {
  try {
    return (await stat(path)).mtimeMs;
  } catch {
    return undefined;
  }
}

/** The newest modification time of the files under `dir` that `keep` accepts. */
async function newestIn(dir: string, keep: (path: string) => boolean): Promise<number> {
  let newest = 0;
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    const path = join(entry.parentPath, entry.name);
    if (!entry.isFile() || !keep(path) || path.includes("node_modules")) continue;
    newest = Math.max(newest, (await stat(path)).mtimeMs);
  }
  return newest;
}

function projectRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, "package.json"))) return dir;
    if (dirname(dir) === dir) throw new Error(`no package.json above ${from}`);
  }
}
