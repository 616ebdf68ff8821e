import { Validator } from "@seriousme/openapi-schema-validator";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { sql } from "kysely";
import type {
  OpenAPIObject,
  OperationObject,
  ReferenceObject,
  ResponseObject,
} from "openapi3-ts/oas31";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { PageJson, SessionJson } from "../../src/rest/schemas.js";
import { testStore } from "../support/database.js";
import { insertAnswer, insertQuiz, insertSessions } from "../support/fixtures.js";
import { startTestService, type TestService } from "../support/service.js";

/**
 * Every route the app registers, captured by an onRoute hook added to each
 * Fastify instance as it is made (buildServer makes one and calls ready()
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
  if (["/openapi.json", "/healthz", "/readyz", "/metrics", "*", "/*"].includes(url)) return false;
  if (/^\/[A-Za-z_]\w*(\.\w+)+\/\w+$/.test(url)) return false; // Connect/gRPC: /package.Service/Method
  return true;
}

const DOC_ID = "urn:practice-sessions:openapi";
const METHODS = ["get", "put", "post", "delete", "patch"] as const;
type Method = (typeof METHODS)[number];

/**
 * The document with every object schema that lists its properties closed
 * (additionalProperties: false): the published document leaves them open so
 * fields can be added, but the service must emit exactly the documented ones.
 */
function closedSchemas(doc: OpenAPIObject): OpenAPIObject {
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

/** The document the service serves: generated from its route schemas (rest/operations.ts). */
let openApiDocument: OpenAPIObject;
let doc: OpenAPIObject;
const ajv = new Ajv2020({ strict: true, allErrors: true });
addFormats.default(ajv);
let svc: TestService;

beforeAll(async () => {
  // 503 needs a database connection to cut: MySQL only.
  svc = await startTestService({ proxy: testStore() === "mysql" });
  openApiDocument = (await (await svc.rest(null, "GET", "/openapi.json")).json()) as OpenAPIObject;
  doc = closedSchemas(openApiDocument);
  // The whole document is one schema resource: "#/components/schemas/X" refs
  // resolve inside it, and any schema in it can be named by JSON pointer. Its
  // OpenAPI fields (openapi, info, paths, ...) are annotations to ajv.
  for (const field of Object.keys(doc)) ajv.addKeyword(field);
  ajv.addSchema({ ...doc, $id: DOC_ID });
});
afterAll(async () => {
  await svc?.close();
});

const esc = (segment: string) => segment.replaceAll("~", "~0").replaceAll("/", "~1");
const pointer = (...segments: string[]) => `#/${segments.map(esc).join("/")}`;

function validatorAt(schemaPointer: string) {
  return ajv.compile({ $ref: `${DOC_ID}${schemaPointer}` });
}

function expectValid(schemaPointer: string, value: unknown, what: string) {
  const validate = validatorAt(schemaPointer);
  const ok = validate(value);
  expect(ok, `${what}: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(value)}`).toBe(true);
}

/** Follows a local $ref to the pointer of the object it names. */
function deref(at: string, node: unknown): [string, Record<string, unknown>] {
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

function operations(): { path: string; method: Method; op: OperationObject }[] {
  return Object.entries(doc.paths ?? {}).flatMap(([path, item]) =>
    METHODS.flatMap((method) => (item[method] ? [{ path, method, op: item[method] }] : [])),
  );
}

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
      "/quizzes/{quiz_id}",
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

describe("real responses match the documented ones", () => {
  /** (path template, method, status) triples seen, to check every documented response is. */
  const seen = new Set<string>();

  /** Checks a response against the document: status, media type, body schema, headers. */
  async function check<T = unknown>(res: Response, path: string, method: Method): Promise<T> {
    const op = doc.paths?.[path]?.[method] as OperationObject;
    const status = String(res.status);
    const documented = op.responses?.[status] as ResponseObject | ReferenceObject | undefined;
    expect(documented, `${method} ${path}: ${status} is not documented`).toBeDefined();
    const [responsePtr, response] = deref(
      pointer("paths", path, method, "responses", status),
      documented,
    );
    const mediaType = (res.headers.get("content-type") ?? "").split(";")[0]?.trim() ?? "";
    expect(Object.keys(response.content as object)).toContain(mediaType);
    const body = await res.json();
    expectValid(
      `${responsePtr}/content/${esc(mediaType)}/schema`,
      body,
      `${method} ${path} ${status}`,
    );
    for (const [name, header] of Object.entries((response.headers ?? {}) as object)) {
      const [headerPtr, h] = deref(`${responsePtr}/headers/${esc(name)}`, header);
      const value = res.headers.get(name);
      if (h.required) expect(value, `${name} header of ${status}`).not.toBeNull();
      if (value !== null) expectValid(`${headerPtr}/schema`, value, `${name} header`);
    }
    seen.add(`${method} ${path} ${status}`);
    return body as T;
  }

  const QUIZ = "/quizzes/{quiz_id}";
  const LIST = "/quizzes/{quiz_id}/sessions";
  const SESSION = "/sessions/{id}";
  const ANSWERS = "/sessions/{id}/answers";
  const COMPLETE = "/sessions/{id}/complete";

  it("list: 200 (empty, a full page with more, completed sessions), 400, 401, 404", async () => {
    const quiz = await insertQuiz(svc.db);
    const user = "openapi-lister";
    const path = `/quizzes/${quiz.quizId}/sessions`;
    await check(await svc.rest(user, "GET", path), LIST, "get");

    const base = Date.now() - 3_600_000;
    await insertSessions(
      svc.db,
      [0, 1, 2].map((i) => ({
        id: `0199f3c2-5b1e-7c3a-9d4e-00000000000${i}`,
        userId: user,
        quizId: quiz.quizId,
        startedAt: new Date(base + i * 1000),
        completedAt: i < 2 ? new Date(base + i * 1000 + 500) : null,
        totalQuestions: 3,
        correctAnswers: i,
      })),
    );
    const first = await check<PageJson>(
      await svc.rest(user, "GET", `${path}?limit=2`),
      LIST,
      "get",
    );
    expect(first).toMatchObject({ has_more: true, next_cursor: expect.any(String) });
    const last = await check<PageJson>(
      await svc.rest(user, "GET", `/api${path}?limit=2&cursor=${first.next_cursor}`),
      LIST,
      "get",
    );
    expect(last).toMatchObject({ has_more: false, next_cursor: null });
    expect(last.sessions[0]?.score_percentage).toBe(0);

    for (const query of ["limit=0", "limit=abc", "status=done", "cursor=nope", "limit=1&limit=2"]) {
      const res = await svc.rest(user, "GET", `${path}?${query}`);
      expect(res.status, query).toBe(400);
      await check(res, LIST, "get");
    }
    await check(await svc.rest(null, "GET", path), LIST, "get");
    await check(
      await svc.rest(user, "GET", path, { headers: { authorization: "Bearer not-a-jwt" } }),
      LIST,
      "get",
    );
    await check(await svc.rest(user, "GET", "/quizzes/999999/sessions"), LIST, "get");
    await check(await svc.rest(user, "GET", "/api/quizzes/abc/sessions"), LIST, "get");
  });

  it("get quiz: 200, 401, 404", async () => {
    const quiz = await insertQuiz(svc.db, { questions: 2 });
    const user = "openapi-reader";
    await check(await svc.rest(user, "GET", `/quizzes/${quiz.quizId}`), QUIZ, "get");
    await check(await svc.rest(user, "GET", `/api/quizzes/${quiz.quizId}`), QUIZ, "get");
    await check(await svc.rest(null, "GET", `/quizzes/${quiz.quizId}`), QUIZ, "get");
    await check(await svc.rest(user, "GET", "/quizzes/999999"), QUIZ, "get");
  });

  it("start: 201 with Location, 200 with answers, 400, 401, 404", async () => {
    const quiz = await insertQuiz(svc.db, { questions: 2 });
    const user = "openapi-starter";
    const path = `/quizzes/${quiz.quizId}/sessions`;
    const created = await svc.rest(user, "POST", path);
    expect(created.status).toBe(201);
    const session = await check<SessionJson>(created, LIST, "post");

    const [q1, q2] = quiz.questionIds as [string, string];
    const at = new Date();
    await insertAnswer(svc.db, {
      sessionId: session.id,
      questionId: q1,
      userAnswer: "A1",
      isCorrect: true,
      answeredAt: at,
    });
    await insertAnswer(svc.db, {
      sessionId: session.id,
      questionId: q2,
      userAnswer: "nope",
      isCorrect: false,
      answeredAt: new Date(at.getTime() + 1),
    });
    await sql`DELETE FROM questions WHERE id = ${q1}`.execute(svc.db);
    const resumed = await svc.rest(user, "POST", `/api${path}`, {
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expect(resumed.status).toBe(200);
    const body = await check<SessionJson>(resumed, LIST, "post");
    expect(body.answers.map((a) => a.question_id)).toEqual([null, q2]);

    const createdUnderApi = await svc.rest("openapi-other", "POST", `/api${path}`);
    expect(createdUnderApi.headers.get("location")).toMatch(/^\/api\/sessions\//);
    await check(createdUnderApi, LIST, "post");

    const empty = await insertQuiz(svc.db, { questions: 0 });
    await check(await svc.rest(user, "POST", `/quizzes/${empty.quizId}/sessions`), LIST, "post");
    const array = await svc.rest(user, "POST", path, {
      headers: { "content-type": "application/json" },
      body: "[]",
    });
    expect(array.status).toBe(400);
    await check(array, LIST, "post");
    await check(await svc.rest(null, "POST", path), LIST, "post");
    await check(await svc.rest(user, "POST", "/quizzes/999999/sessions"), LIST, "post");
    const text = { headers: { "content-type": "text/plain" }, body: "{}" };
    await check(await svc.rest(user, "POST", path, text), LIST, "post");
  });

  it("get, answer, complete: 200/201, 400, 401, 404, 409", async () => {
    const quiz = await insertQuiz(svc.db, { questions: 2 });
    const [q1, q2] = quiz.questionIds as [string, string];
    const user = "openapi-answerer";
    const started = await svc.rest(user, "POST", `/quizzes/${quiz.quizId}/sessions`);
    const { id } = (await started.json()) as SessionJson;
    const json = (body: unknown): RequestInit => ({
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });

    const answered = await svc.rest(
      user,
      "POST",
      `/sessions/${id}/answers`,
      json({ question_id: q1, user_answer: "A1" }),
    );
    expect(answered.status).toBe(201);
    await check(answered, ANSWERS, "post");
    await check(
      await svc.rest(
        user,
        "POST",
        `/sessions/${id}/answers`,
        json({ question_id: q1, user_answer: "A1" }),
      ),
      ANSWERS,
      "post",
    );
    await check(
      await svc.rest(
        user,
        "POST",
        `/sessions/${id}/answers`,
        json({ question_id: q2, user_answer: " " }),
      ),
      ANSWERS,
      "post",
    );
    await check(
      await svc.rest(
        null,
        "POST",
        `/sessions/${id}/answers`,
        json({ question_id: q2, user_answer: "x" }),
      ),
      ANSWERS,
      "post",
    );
    await check(
      await svc.rest(
        "someone-else",
        "POST",
        `/sessions/${id}/answers`,
        json({ question_id: q2, user_answer: "x" }),
      ),
      ANSWERS,
      "post",
    );

    const text = { headers: { "content-type": "text/plain" }, body: "{}" };
    await check(await svc.rest(user, "POST", `/sessions/${id}/answers`, text), ANSWERS, "post");
    await check(await svc.rest(user, "POST", `/sessions/${id}/complete`, text), COMPLETE, "post");
    await check(await svc.rest(user, "GET", `/api/sessions/${id}`), SESSION, "get");
    await check(await svc.rest(null, "GET", `/sessions/${id}`), SESSION, "get");
    await check(await svc.rest(user, "GET", "/sessions/nope"), SESSION, "get");

    await check(await svc.rest(user, "POST", `/sessions/${id}/complete`), COMPLETE, "post");
    await check(await svc.rest(user, "POST", `/sessions/${id}/complete`), COMPLETE, "post");
    await check(await svc.rest(null, "POST", `/sessions/${id}/complete`), COMPLETE, "post");
    await check(
      await svc.rest("someone-else", "POST", `/sessions/${id}/complete`),
      COMPLETE,
      "post",
    );
  });

  it.skipIf(testStore() === "sqlite")(
    "every operation: 503 while the database is unreachable",
    async () => {
      const quiz = await insertQuiz(svc.db);
      const started = await svc.rest("openapi-outage", "POST", `/quizzes/${quiz.quizId}/sessions`);
      const { id } = (await started.json()) as SessionJson;
      await svc.proxy?.cut();
      try {
        for (const method of ["get", "post"] as const) {
          const res = await svc.rest("openapi-outage", method, `/quizzes/${quiz.quizId}/sessions`);
          expect(res.status).toBe(503);
          await check(res, LIST, method);
        }
        await check(await svc.rest("openapi-outage", "GET", `/sessions/${id}`), SESSION, "get");
        await check(
          await svc.rest("openapi-outage", "GET", `/quizzes/${quiz.quizId}`),
          QUIZ,
          "get",
        );
        await check(
          await svc.rest("openapi-outage", "POST", `/sessions/${id}/answers`, {
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ question_id: quiz.questionIds[0], user_answer: "A1" }),
          }),
          ANSWERS,
          "post",
        );
        await check(
          await svc.rest("openapi-outage", "POST", `/sessions/${id}/complete`),
          COMPLETE,
          "post",
        );
      } finally {
        await svc.proxy?.restore();
      }
    },
  );

  it("covered every documented response of every operation", () => {
    const documented = operations().flatMap(({ path, method, op }) =>
      Object.keys(op.responses ?? {})
        // Only the MySQL run can cut the database connection.
        .filter((status) => status !== "503" || testStore() === "mysql")
        .map((status) => `${method} ${path} ${status}`),
    );
    expect([...seen].sort()).toEqual(documented.sort());
  });
});
