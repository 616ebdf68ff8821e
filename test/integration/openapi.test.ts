import { Validator } from "@seriousme/openapi-schema-validator";
import type { OpenAPIObject } from "openapi3-ts/oas31";
import { beforeAll, describe, expect, it, vi } from "vitest";
import {
  deref,
  esc,
  expectValid,
  operations,
  pointer,
  served,
  useServedDocument,
} from "../support/openapi-document.js";
import type { TestService } from "../support/service.js";

/**
 * Every route the app registers, captured by an onRoute hook added to each
 * Fastify instance as it is made (buildApp makes one and calls ready()
 * before returning it, so a hook added afterwards would see nothing).
 */
const registered = vi.hoisted(() => [] as { method: string; url: string }[]);
vi.mock("fastify", async (importOriginal) => {
  const mod = await importOriginal<typeof import("fastify")>();
  const factory = ((options?: object) => {
    const app = mod.fastify(options);
    app.addHook("onRoute", (route) => {
      for (const method of [route.method].flat()) registered.push({ method, url: route.url });
    });
    return app;
  }) as typeof mod.fastify;
  return { ...mod, fastify: factory, default: factory };
});

/** Routes that are not the REST gateway's: served or documented elsewhere. */
function isRestGatewayRoute({ method, url }: { method: string; url: string }): boolean {
  if (method === "HEAD" || method === "OPTIONS") return false; // Fastify's HEAD for GET; CORS preflight
  if (["/", "/openapi.json", "/healthz", "/readyz", "/metrics", "*", "/*"].includes(url))
    return false;
  if (/^\/[A-Za-z_]\w*(\.\w+)+\/\w+$/.test(url)) return false; // Connect/gRPC: /package.Service/Method
  return true;
}

useServedDocument();
let svc: TestService;
let openApiDocument: OpenAPIObject;
let doc: OpenAPIObject;
beforeAll(() => {
  ({ svc, published: openApiDocument, doc } = served());
});

describe("the OpenAPI document", () => {
  it("is a valid OpenAPI 3.1 document", async () => {
    const result = await new Validator().validate(structuredClone(openApiDocument) as never);
    expect(result.errors ?? [], JSON.stringify(result.errors, null, 2)).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it("has examples that validate against their schemas", () => {
    let checked = 0;
    // Every object with a `schema` (media types, parameters, headers) and its examples.
    const visit = (node: unknown, at: string) => {
      if (typeof node !== "object" || node === null) return;
      const n = node as Record<string, unknown>;
      if (n.schema !== undefined) {
        const schemaPtr = `${at}/schema`;
        if (n.example !== undefined) {
          expectValid(schemaPtr, n.example, `${at}/example`);
          checked++;
        }
        for (const [name, example] of Object.entries((n.examples ?? {}) as object)) {
          const [, resolved] = deref(`${at}/examples/${esc(name)}`, example);
          expectValid(schemaPtr, resolved.value, `${at}/examples/${name}`);
          checked++;
        }
      }
      for (const [key, value] of Object.entries(n)) {
        if (key !== "schema") visit(value, `${at}/${esc(key)}`);
      }
    };
    visit(doc.paths, "#/paths");
    visit(doc.components, "#/components");
    // JSON Schema `examples` arrays inside component schemas and their properties.
    for (const [name, schema] of Object.entries(doc.components?.schemas ?? {})) {
      const at = pointer("components", "schemas", name);
      const props = Object.entries((schema as { properties?: object }).properties ?? {});
      for (const [ptr, s] of [
        [at, schema],
        ...props.map(([p, s]) => [`${at}/properties/${p}`, s]),
      ]) {
        for (const example of (s as { examples?: unknown[] }).examples ?? []) {
          expectValid(ptr as string, example, `${ptr}/examples`);
          checked++;
        }
      }
    }
    expect(checked).toBeGreaterThan(15);
  });

  it("gives problem examples the status of the response they belong to", () => {
    for (const { path, method, op } of operations()) {
      for (const [status, response] of Object.entries(op.responses ?? {})) {
        const [, r] = deref("", response);
        const media = (r.content as Record<string, { examples?: object }> | undefined)?.[
          "application/problem+json"
        ];
        for (const example of Object.values(media?.examples ?? {})) {
          expect(example.value.status, `${method} ${path} ${status}`).toBe(Number(status));
        }
      }
    }
  });
});

describe("GET /openapi.json", () => {
  it("serves the document without authentication", async () => {
    const res = await svc.rest(null, "GET", "/openapi.json");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/json\b/);
    const served = (await res.json()) as OpenAPIObject;
    expect(served.openapi).toBe("3.1.1");
    expect(Object.keys(served.paths ?? {}).sort()).toEqual([
      "/quizzes",
      "/quizzes/{quiz_id}",
      "/quizzes/{quiz_id}/review",
      "/quizzes/{quiz_id}/sessions",
      "/sessions/{id}",
      "/sessions/{id}/answers",
      "/sessions/{id}/complete",
    ]);
    expect(served.servers?.map((s) => s.url)).toEqual(["/", "/api"]);
  });

  it("documents every REST route, and every documented operation is a route", () => {
    const actual = new Set(
      registered.filter(isRestGatewayRoute).map((r) => `${r.method} ${r.url}`),
    );
    const prefixes = (doc.servers ?? []).map((s) => (s.url === "/" ? "" : s.url));
    const documented = new Set(
      prefixes.flatMap((prefix) =>
        operations().map(
          ({ path, method }) =>
            `${method.toUpperCase()} ${prefix}${path.replace(/\{(\w+)\}/g, ":$1")}`,
        ),
      ),
    );
    expect(actual.size).toBeGreaterThan(0);
    expect([...actual].sort()).toEqual([...documented].sort());
  });
});
