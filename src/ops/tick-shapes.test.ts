import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { keptTickEntry } from "./tick-shapes.js";

describe("the shape of nextTick's entries is kept", () => {
  it("holds one of nextTick's own entries: its callback and its async ids", () => {
    const entry = keptTickEntry() as Record<string, unknown> | undefined;
    expect(entry).toBeDefined();
    expect(typeof entry?.callback).toBe("function");
    const keys = Object.getOwnPropertySymbols(entry).map((s) => s.description);
    expect(keys).toEqual(expect.arrayContaining(["async_id_symbol", "trigger_async_id_symbol"]));
  });

  it.each([
    ["src/main.ts", "./ops/"],
    ["scripts/relay.ts", "../src/ops/"],
  ])("%s imports it first, after the Node check", (file, folder) => {
    const imports = readFileSync(file, "utf8").match(/^import "[^"]+";$/gm);
    expect(imports?.slice(0, 2)).toEqual([
      `import "${folder}node-version.js";`,
      `import "${folder}tick-shapes.js";`,
    ]);
  });
});
