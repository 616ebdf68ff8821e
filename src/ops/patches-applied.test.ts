import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { projectRoot, requirePatches, unappliedPatches } from "./patches-applied.js";
import { StartupError } from "./startup-errors.js";

// Every patch in patches/ must be on the installed packages; a copy of one
// patched file with the patch undone is caught, with one line naming it.

const root = projectRoot();
const scratch = mkdtempSync(join(tmpdir(), "patches-applied-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const CONNECT_FILE = "node_modules/@connectrpc/connect/dist/esm/protocol/serialization.js";

describe("the patches check", () => {
  it("finds every patch applied to this install", () => {
    expect(unappliedPatches(root)).toEqual([]);
    expect(() => requirePatches(root)).not.toThrow();
  });

  it("names a patch whose file is back as the package shipped it, in one line", async () => {
    const { readFileSync } = await import("node:fs");
    cpSync(join(root, "patches"), join(scratch, "patches"), { recursive: true });
    // Every patched file copied as installed, then one patch undone by hand.
    for (const patch of [
      "@connectrpc+connect+2.2.0.patch",
      "@connectrpc+connect-fastify+2.2.0.patch",
      "@opentelemetry+otlp-transformer+0.301.0.patch",
    ]) {
      const text = readFileSync(join(root, "patches", patch), "utf8");
      for (const [, path] of text.matchAll(/^diff --git a\/(\S+) b\//gm)) {
        mkdirSync(join(scratch, path as string, ".."), { recursive: true });
        cpSync(join(root, path as string), join(scratch, path as string));
      }
    }
    expect(unappliedPatches(scratch)).toEqual([]);
    const patched = readFileSync(join(root, CONNECT_FILE), "utf8");
    writeFileSync(
      join(scratch, CONNECT_FILE),
      patched.replace("Code.InvalidArgument);", "Code.Internal);"),
    );
    expect(unappliedPatches(scratch)).toEqual([
      `patches/@connectrpc+connect+2.2.0.patch (${CONNECT_FILE})`,
    ]);
    expect(() => requirePatches(scratch)).toThrow(StartupError);
    expect(() => requirePatches(scratch)).toThrow(
      /^not applied to node_modules: patches\/@connectrpc\+connect\+2\.2\.0\.patch .*; run: npx patch-package --error-on-fail$/,
    );
  });
});
