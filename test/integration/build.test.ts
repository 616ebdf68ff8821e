import { execFile, execFileSync } from "node:child_process";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { testStore } from "../support/database.js";
import { TEST_SECRET } from "../support/service.js";

const run = promisify(execFile);

/** The machine's own Node when it is older than 22 (Node 20 here): the build must refuse it. */
const oldNode = ((): string | undefined => {
  try {
    const version = execFileSync("/usr/bin/node", ["--version"], { encoding: "utf8" });
    return Number(version.slice(1).split(".")[0]) < 22 ? "/usr/bin/node" : undefined;
  } catch {
    return undefined;
  }
})();
const repo = process.cwd();

/**
 * What `npm start` and the image run: the compiled JavaScript in dist/, on
 * the Node that npm scripts get (the `node` devDependency, Node 24).
 */
describe.skipIf(testStore() === "mysql")("the build", () => {
  it("the tests run on Node 22 or later (npm scripts put node_modules/.bin first)", () => {
    expect(Number(process.versions.node.split(".")[0])).toBeGreaterThanOrEqual(22);
  });

  it("tsc emits dist/ with source maps; the scripts run from it and stack traces name .ts lines", async () => {
    // An out-of-the-way build: dist/ may be in use by a running `npm start`.
    const out = join(repo, "dist-test-build");
    await rm(out, { recursive: true, force: true });
    try {
      await run(
        process.execPath,
        [
          join(repo, "node_modules/typescript/bin/tsc"),
          "-p",
          "tsconfig.build.json",
          "--outDir",
          out,
          "--tsBuildInfoFile",
          join(out, ".tsbuildinfo"),
        ],
        { cwd: repo },
      );
      const token = await run(
        process.execPath,
        ["--enable-source-maps", join(out, "scripts/token.js"), "alice"],
        { env: { ...process.env, JWT_SECRET: TEST_SECRET }, cwd: repo },
      );
      expect(token.stdout.trim()).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);

      const config = join(out, "src/config.js");
      const trace = await run(
        process.execPath,
        [
          "--enable-source-maps",
          "--input-type=module",
          "-e",
          `const { loadConfig } = await import(${JSON.stringify(config)});
           try { loadConfig({ DATABASE_URL: "nonsense" }); } catch (err) { console.log(err.stack); }`,
        ],
        { cwd: repo },
      );
      expect(trace.stdout).toMatch(/src\/config\.ts:\d+:\d+/);
      expect(trace.stdout).not.toContain("config.js");

      // A Node too old for better-sqlite3 (it segfaults on Node 20): one line, exit 1, before anything native loads.
      if (oldNode !== undefined) {
        for (const entry of ["src/main.js", "scripts/migrate.js"]) {
          const refused = await run(oldNode, [join(out, entry)], { cwd: repo }).then(
            () => ({ code: 0, stdout: "", stderr: "" }),
            (err: { code: number | null; stdout: string; stderr: string }) => err,
          );
          const lines = refused.stderr.split("\n").filter((l) => l.trim() !== "");
          expect(refused.code, refused.stderr).toBe(1);
          expect(lines, refused.stderr).toHaveLength(1);
          expect(lines[0]).toMatch(
            /needs Node\.js 22 or later \(24 recommended\).*this is Node 2\d\..*npm start/,
          );
          expect(refused.stdout).toBe("");
        }
      }
    } finally {
      await rm(out, { recursive: true, force: true });
    }
  });
});
