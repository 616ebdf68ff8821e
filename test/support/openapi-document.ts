import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import type { OpenAPIObject, OperationObject } from "openapi3-ts/oas31";
import { afterAll, beforeAll, expect } from "vitest";
import { testStore } from "./database.js";
import { startTestService, type TestService } from "./service.js";

/**
 * The OpenAPI document a running service serves, made ready for checks: its
 * object schemas closed, loaded in ajv as one schema resource, with helpers
 * to validate a value against any schema in it by JSON pointer. For
 * test/integration/openapi*.test.ts.
 */

export const DOC_ID = "urn:practice-sessions:openapi";
export const METHODS = ["get", "put", "post", "delete", "patch"] as const;
export type Method = (typeof METHODS)[number];

/**
 * The document with every object schema that lists its properties closed
 * (additionalProperties: false): the published document leaves them open so
 * fields can be added, but the service must emit exactly the documented ones.
 */
export function closedSchemas(doc: OpenAPIObject): OpenAPIObject {
  const copy = structuredClone(doc);
  const close = (schema: unknown) => {
    if (typeof schema !== "object" || schema === null) return;
    const s = schema as Record<string, unknown>;
    if (s.properties && s.additionalProperties === undefined) s.additionalProperties = false;
    for (const sub of Object.values((s.properties ?? {}) as object)) close(sub);
    close(s.items);
  };
  const visit = (node: unknown) => {
    if (typeof node !== "object" || node === null) return;
    for (const [key, value] of Object.entries(node)) {
      if (key === "schema") close(value);
      else visit(value);
    }
  };
  visit(copy.paths);
  visit(copy.components?.responses);
  for (const schema of Object.values(copy.components?.schemas ?? {})) close(schema);
  return copy;
}

let openApiDocument: OpenAPIObject;
let doc: OpenAPIObject;
// Made anew per test file: files may share this module (vitest's isolate: false).
let ajv: Ajv2020;
let svc: TestService;

/** The service, the document as served, and the closed copy the checks use. */
export function served(): { svc: TestService; published: OpenAPIObject; doc: OpenAPIObject } {
  return { svc, published: openApiDocument, doc };
}

/** Registers the hooks that start the service and load its document (call once per file). */
export function useServedDocument(): void {
  beforeAll(async () => {
    // 503 needs a database connection to cut: MySQL only.
    svc = await startTestService({ proxy: testStore() === "mysql" });
    openApiDocument = (await (
      await svc.rest(null, "GET", "/openapi.json")
    ).json()) as OpenAPIObject;
    doc = closedSchemas(openApiDocument);
    ajv = new Ajv2020({ strict: true, allErrors: true });
    addFormats.default(ajv);
    // The whole document is one schema resource: "#/components/schemas/X" refs
    // resolve inside it, and any schema in it can be named by JSON pointer. Its
    // OpenAPI fields (openapi, info, paths, ...) are annotations to ajv.
    for (const field of Object.keys(doc)) ajv.addKeyword(field);
    ajv.addSchema({ ...doc, $id: DOC_ID });
  });
  afterAll(async () => {
    await svc?.close();
  });
}

export const esc = (segment: string) => segment.replaceAll("~", "~0").replaceAll("/", "~1");
export const pointer = (...segments: string[]) => `#/${segments.map(esc).join("/")}`;

function validatorAt(schemaPointer: string) {
  return ajv.compile({ $ref: `${DOC_ID}${schemaPointer}` });
}

export function expectValid(schemaPointer: string, value: unknown, what: string) {
  const validate = validatorAt(schemaPointer);
  const ok = validate(value);
  expect(ok, `${what}: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(value)}`).toBe(true);
}

/** Follows a local $ref to the pointer of the object it names. */
export function deref(at: string, node: unknown): [string, Record<string, unknown>] {
  let ptr = at;
  let value = node as Record<string, unknown>;
  while (typeof value.$ref === "string") {
    ptr = value.$ref;
    value = ptr
      .slice(2)
      .split("/")
      .map((s) => s.replaceAll("~1", "/").replaceAll("~0", "~"))
      .reduce((v: Record<string, unknown>, key) => v[key] as Record<string, unknown>, doc as never);
  }
  return [ptr, value];
}

export function operations(): { path: string; method: Method; op: OperationObject }[] {
  return Object.entries(doc.paths ?? {}).flatMap(([path, item]) =>
    METHODS.flatMap((method) => (item[method] ? [{ path, method, op: item[method] }] : [])),
  );
}
