import fc from "fast-check";
import type { InputArbitraries } from "./arbitraries.js";
import { LEAK_LIKE } from "./checks.js";

/**
 * A JSON field and where it should be refused: "ok" (not at all), "parse"
 * (protobuf JSON decoding, before authentication) or "app" (the use case,
 * after authentication).
 */
export type Check = "ok" | "parse" | "app";
export type JsonField = { value: unknown; check: Check };
const field =
  (check: Check) =>
  (value: unknown): JsonField => ({ value, check });

/** Whole requests, one generator per transport and call, built from the input parts. */
export function requestArbitraries(a: InputArbitraries) {
  const rest = fc.record({
    method: fc.oneof(
      { weight: 9, arbitrary: fc.constantFrom("GET", "POST") },
      { weight: 1, arbitrary: fc.constantFrom("PUT", "DELETE", "PATCH", "OPTIONS", "HEAD") },
    ),
    prefix: fc.constantFrom("", "/api"),
    quiz: a.quizId,
    encode: fc.boolean(),
    query: a.query,
    headers: a.headers,
    body: a.body,
    auth: a.auth,
  });

  const connectList = fc.record({
    quiz: a.quizId,
    quizAs: fc.constantFrom("string", "number", "missing", "array"),
    status: fc.oneof(
      fc
        .constantFrom(
          undefined,
          "SESSION_STATUS_UNSPECIFIED",
          "SESSION_STATUS_ACTIVE",
          "SESSION_STATUS_COMPLETED",
          0,
          1,
          2,
          null,
        )
        .map(field("ok")),
      // Connect ignores unknown fields, and protobuf JSON then ignores unknown
      // enum names too: these mean "no filter", not an error.
      fc.constantFrom("ACTIVE", "active", "SESSION_STATUS_PAUSED").map(field("ok")),
      fc.constantFrom(2 ** 31, 1.5, true, {}, []).map(field("parse")),
      fc.oneof(fc.constantFrom(-1, 3), fc.integer({ min: 3, max: 2 ** 31 - 1 })).map(field("app")),
    ),
    limit: fc.oneof(
      fc
        .oneof(
          fc.constantFrom(undefined, 0, null, "0"),
          fc.integer({ min: 1, max: 100 }),
          fc.integer({ min: 1, max: 100 }).map(String),
        )
        .map(field("ok")),
      fc
        .oneof(fc.integer({ min: -(2 ** 31), max: -1 }), fc.integer({ min: 101, max: 2 ** 31 - 1 }))
        .map(field("app")),
      fc.constantFrom(2 ** 31, 2 ** 40, 1.5, -0.5, "1e2x", "abc", true, [], {}).map(field("parse")),
    ),
    cursor: fc.oneof(
      a.cursor.map((c) => field(c.valid ? "ok" : "app")(c.value)),
      fc.constantFrom(12, true, [], {}).map(field("parse")),
    ),
    extra: fc.dictionary(
      fc.string({ maxLength: 6 }).map((k) => `x_${k}`),
      fc.jsonValue({ maxDepth: 1 }),
      { maxKeys: 2 },
    ),
    auth: a.auth,
    headers: a.headers,
  });

  const connectStart = fc.record({
    quiz: a.quizId,
    shape: fc.constantFrom("json", "garbage", "binary"),
    garbage: fc.oneof(
      // A parse error quotes the body back: text that reads like a leaked
      // database error (checks.ts) would be the client's own.
      fc.string({ maxLength: 30 }).filter((g) => !LEAK_LIKE.test(g)),
      fc.constantFrom("{", "[]", "null", '{"quizId":1.5}', '{"quizId":{}}'),
    ),
    bytes: fc.uint8Array({ maxLength: 40 }),
    auth: a.auth,
  });

  /** Typed gRPC requests (grpc-js encodes them): any field values the types allow. */
  const grpc = fc.record({
    quiz: a.quizId,
    status: fc.integer({ min: -5, max: 8 }),
    limit: fc.oneof(
      fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
      fc.integer({ min: 0, max: 120 }),
    ),
    cursor: a.cursor,
    start: fc.boolean(),
  });

  return { rest, connectList, connectStart, grpc };
}

type Generated<A> = A extends fc.Arbitrary<infer T> ? T : never;
type Requests = ReturnType<typeof requestArbitraries>;
export type RestRequest = Generated<Requests["rest"]>;
export type ConnectList = Generated<Requests["connectList"]>;
export type ConnectStart = Generated<Requests["connectStart"]>;
export type GrpcRequest = Generated<Requests["grpc"]>;
