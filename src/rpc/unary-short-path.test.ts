import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

// Our unary paths (unary-methods.ts, unary-short-path.ts, grpc-streams.ts, short-path-*.ts)
// use exports Connect marks private: they may change in any release. Connect is pinned to exact versions, and
// this fails when an upgrade removes or reshapes one of them.

const PINNED = [
  "@connectrpc/connect",
  "@connectrpc/connect-node",
  "@connectrpc/connect-fastify",
  "@connectrpc/connect-web",
];

/** Each private import of the short path: its module, name, kind and arity. */
const PRIVATE_IMPORTS: Record<string, Record<string, { kind: string; arity?: number }>> = {
  "@connectrpc/connect/protocol": {
    Compression: { kind: "type" },
    compressionNegotiate: { kind: "function", arity: 4 },
    createMethodSerializationLookup: { kind: "function", arity: 4 },
    invokeUnaryImplementation: { kind: "function", arity: 4 },
    mergeNonProtocolHeaders: { kind: "function", arity: 2 },
    UniversalHandler: { kind: "type" },
    UniversalServerResponse: { kind: "type" },
    validateUniversalHandlerOptions: { kind: "function", arity: 1 },
  },
  "@connectrpc/connect/protocol-connect": {
    contentTypeUnaryJson: { kind: "string" },
    contentTypeUnaryProto: { kind: "string" },
    contentTypeUnaryRegExp: { kind: "object" },
    errorToJsonBytes: { kind: "function", arity: 2 },
    parseTimeout: { kind: "function", arity: 2 },
    trailerMux: { kind: "function", arity: 2 },
  },
  "@connectrpc/connect/protocol-grpc": {
    parseTimeout: { kind: "function", arity: 2 },
    setTrailerStatus: { kind: "function", arity: 2 },
  },
};

const json = (path: string) => JSON.parse(readFileSync(path, "utf8"));

describe("our unary paths' private Connect imports", () => {
  it("Connect's packages are pinned to one exact version, the one installed", () => {
    const pkg = json("package.json");
    const declared = { ...pkg.dependencies, ...pkg.devDependencies } as Record<string, string>;
    const versions = new Set<string>();
    for (const name of PINNED) {
      expect(declared[name], name).toMatch(/^\d+\.\d+\.\d+$/);
      expect(json(`node_modules/${name}/package.json`).version, name).toBe(declared[name]);
      versions.add(declared[name] as string);
    }
    expect(versions.size).toBe(1);
  });

  it("lists every import of their files from Connect's protocol modules", () => {
    const dir = new URL(".", import.meta.url);
    const source = readdirSync(dir)
      .filter((f) =>
        /^(unary-short-path|unary-methods|grpc-streams|short-path-[\w-]+)\.ts$/.test(f),
      )
      .map((f) => readFileSync(new URL(f, dir), "utf8"))
      .join("\n");
    const found: Record<string, Set<string>> = {};
    for (const m of source.matchAll(/import\s*(?:type\s*)?\{([^}]*)\}\s*from\s*"([^"]+)"/g)) {
      const [, names = "", module = ""] = m;
      if (!module.startsWith("@connectrpc/connect/protocol")) continue;
      found[module] ??= new Set();
      for (const n of names.split(",")) {
        const name = n
          .replace(/^\s*type\s+/, "")
          .replace(/\s+as\s+\w+\s*$/, "")
          .trim();
        if (name !== "") found[module].add(name);
      }
    }
    const sorted = Object.fromEntries(
      Object.entries(found).map(([module, names]) => [module, [...names].sort()]),
    );
    const listed = Object.fromEntries(
      Object.entries(PRIVATE_IMPORTS).map(([module, names]) => [module, Object.keys(names).sort()]),
    );
    expect(sorted).toEqual(listed);
  });

  it("each still exists with the expected kind and arity", async () => {
    for (const [module, names] of Object.entries(PRIVATE_IMPORTS)) {
      const exports = (await import(module)) as Record<string, unknown>;
      for (const [name, { kind, arity }] of Object.entries(names)) {
        if (kind === "type") continue; // Checked by tsc.
        const value = exports[name];
        expect(typeof value, `${module} ${name}`).toBe(kind);
        if (arity !== undefined)
          expect((value as (...a: unknown[]) => unknown).length, `${module} ${name}`).toBe(arity);
      }
    }
  });
});
