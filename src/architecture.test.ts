import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const SRC = import.meta.dirname;

/** Every .ts file under `dir` but tests. */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith(".ts") && !e.name.endsWith(".test.ts"))
    .map((e) => join(e.parentPath, e.name));
}

/** The specifiers a file imports or re-exports, type-only ones included. */
function specifiers(file: string): string[] {
  const text = readFileSync(file, "utf8");
  const found = [
    ...text.matchAll(/^\s*(?:import|export)\b[^;]*?\sfrom\s+"([^"]+)"/gms),
    ...text.matchAll(/^\s*import\s+"([^"]+)"/gm),
    ...text.matchAll(/\bimport\(\s*"([^"]+)"\s*\)/g),
    // A package loaded through createRequire (db/sqlite.ts: better-sqlite3, loaded when asked for).
    ...text.matchAll(/\bcreateRequire\([^)]*\)\(\s*"([^"]+)"\s*\)/g),
  ];
  return found.map((m) => m[1] ?? "");
}

/** Relative imports as repository paths of .ts files. */
function localImports(file: string): string[] {
  return specifiers(file)
    .filter((s) => s.startsWith("."))
    .map((s) => resolve(dirname(file), s.replace(/\.js$/, ".ts")));
}

/** The cycles of a directed graph: strongly connected components of two or more, or a self-loop. */
function cycles(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  let next = 0;
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) ?? 0, low.get(w) ?? 0));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v) ?? 0, index.get(w) ?? 0));
      }
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string | undefined;
      do {
        w = stack.pop();
        if (w !== undefined) {
          onStack.delete(w);
          component.push(w);
        }
      } while (w !== undefined && w !== v);
      if (component.length > 1 || graph.get(v)?.includes(v)) found.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

/** A file's layer: its folder under src (app, db, rest...), or the file itself at the top. */
function layerOf(file: string): string {
  const path = relative(SRC, file);
  // Outside src (gen/): the top folder.
  const parts = path.startsWith("../") ? path.split("/").slice(1) : path.split("/");
  return parts.length > 1 ? (parts[0] ?? path) : path;
}

const files = sources(SRC);
const fileGraph = new Map(
  files.map((f) => [relative(SRC, f), localImports(f).map((t) => relative(SRC, t))]),
);
const layerGraph = new Map<string, string[]>();
for (const f of files) {
  const targets = localImports(f)
    .map(layerOf)
    .filter((l) => l !== layerOf(f));
  layerGraph.set(layerOf(f), [...(layerGraph.get(layerOf(f)) ?? []), ...targets]);
}

/** The npm package a specifier names (`@scope/name` or `name`); none for relative and `node:` ones. */
function packageOf(specifier: string): string | undefined {
  if (specifier.startsWith(".") || specifier.startsWith("node:")) return undefined;
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0];
}

const layerPackages = new Map<string, Set<string>>();
for (const f of files) {
  const used = layerPackages.get(layerOf(f)) ?? new Set<string>();
  for (const s of specifiers(f)) {
    const name = packageOf(s);
    if (name !== undefined) used.add(name);
  }
  layerPackages.set(layerOf(f), used);
}

/** Each row of the "Layers" table: the layers and the packages it may import. */
interface LayerRow {
  layers: Set<string>;
  packages: Set<string>;
}

/**
 * The "Layers" table of docs/architecture.md: each row's layers (the backticked `src/...` names
 * of its first column), the layers its "May import" column allows (backticked names; `*`
 * allows every layer) and the npm packages its "Packages" column allows. The document is the
 * rule; this test holds the code to it.
 */
function layerTable(): Map<string, LayerRow> {
  const doc = readFileSync(join(SRC, "..", "docs", "architecture.md"), "utf8");
  const section = doc.split(/^## Layers$/m)[1]?.split(/^## /m)[0] ?? "";
  const table = new Map<string, LayerRow>();
  for (const line of section.split("\n")) {
    const cells = line.split("|").map((c) => c.trim());
    if (cells.length < 6 || !cells[1]?.includes("`src/")) continue;
    const names = (cell: string) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1] ?? "");
    const layers = new Set(
      names(cells[3] ?? "").map((n) => n.replace(/^src\//, "").replace(/\/$/, "")),
    );
    const packages = new Set(names(cells[4] ?? ""));
    for (const n of names(cells[1] ?? "")) {
      if (n.startsWith("src/")) table.set(n.slice(4).replace(/\/$/, ""), { layers, packages });
    }
  }
  return table;
}

/** Packages that only compute (no I/O, no dependencies), which domain rules may use. */
const PURE_LIBRARIES = new Set(["ts-fsrs"]);

describe("the source's shape", () => {
  it("src/domain imports only its own files, Node's and pure libraries (no transport or edge)", () => {
    const outside = sources(join(SRC, "domain")).flatMap((file) =>
      specifiers(file)
        .filter((s) => !(s.startsWith("./") || s.startsWith("node:") || PURE_LIBRARIES.has(s)))
        .map((s) => `${relative(SRC, file)}: ${s}`),
    );
    expect(outside).toEqual([]);
  });

  it("only src/config.ts reads the environment", () => {
    const readers = sources(SRC)
      .filter((file) => /\bprocess\.env\b/.test(readFileSync(file, "utf8")))
      .map((file) => relative(SRC, file));
    expect(readers).toEqual(["config.ts"]);
  });

  it("src has no import cycles between files", () => {
    expect(cycles(fileGraph)).toEqual([]);
  });

  it("nor between layers (src/ops never imports src/rest while src/rest imports src/ops)", () => {
    expect(cycles(layerGraph)).toEqual([]);
  });

  it("each layer imports only the layers its row of docs/architecture.md allows, and every one it allows", () => {
    const table = layerTable();
    const unlisted = [...layerGraph.keys()].filter((l) => !table.has(l));
    expect(unlisted, "layers with no row in docs/architecture.md").toEqual([]);
    const breaches: string[] = [];
    const unused: string[] = [];
    for (const [layer, { layers: allowed }] of table) {
      const used = new Set(layerGraph.get(layer) ?? []);
      if (allowed.has("*")) continue;
      for (const l of used) if (!allowed.has(l)) breaches.push(`${layer} imports ${l}`);
      for (const l of allowed)
        if (!used.has(l)) unused.push(`${layer} may import ${l} but does not`);
    }
    expect(breaches, "imports the table does not allow").toEqual([]);
    expect(unused, "the table allows imports the code does not make: make the row exact").toEqual(
      [],
    );
  });

  it("each layer imports only the npm packages its row of docs/architecture.md names, and every one it names", () => {
    const table = layerTable();
    const breaches: string[] = [];
    const unused: string[] = [];
    for (const [layer, { packages: allowed }] of table) {
      const used = layerPackages.get(layer) ?? new Set<string>();
      for (const p of used) if (!allowed.has(p)) breaches.push(`${layer} imports ${p}`);
      for (const p of allowed)
        if (!used.has(p)) unused.push(`${layer} may import ${p} but does not`);
    }
    expect(breaches, "package imports the table does not allow").toEqual([]);
    expect(
      unused,
      "the table allows packages the code does not import: make the row exact",
    ).toEqual([]);
  });

  it("src/app holds no database or transport handles: no kysely, mysql2, fastify or Connect's Node adapters", () => {
    const forbidden = [
      "kysely",
      "mysql2",
      "fastify",
      "@connectrpc/connect-node",
      "@connectrpc/connect-fastify",
    ];
    const allowed = layerTable().get("app")?.packages ?? new Set<string>();
    expect(forbidden.filter((p) => allowed.has(p) || layerPackages.get("app")?.has(p))).toEqual([]);
  });
});
