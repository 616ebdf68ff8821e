import fc from "fast-check";

/**
 * Generators of the parts of a request that do not depend on the fuzz world:
 * extra headers, bodies (each with its kind, which decides the answer) and
 * the credentials sent.
 */

/** A request body and its kind, which decides the answer. */
export type Body = {
  text: string | undefined;
  contentType: string | undefined;
  kind: "none" | "object" | "json" | "bad" | "huge";
};

/** Headers a client could send; none of them may turn into a 5xx. */
export const headersArb = fc.dictionary(
  fc.constantFrom(
    "accept",
    "accept-encoding",
    "accept-language",
    "content-encoding",
    "connect-protocol-version",
    "connect-timeout-ms",
    "grpc-timeout",
    "x-forwarded-for",
    "x-http-method-override",
    "origin",
    "if-none-match",
    "range",
    "cookie",
    "x-request-id",
    "user-agent",
  ),
  fc.oneof(
    fc.constantFrom(
      "gzip",
      "br",
      "identity",
      "*",
      "x-garbage",
      "-1",
      "0",
      "99999999999",
      "1S",
      "application/xml",
      "1",
      "bytes=0-1",
    ),
    fc.string({
      unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
      maxLength: 30,
    }),
  ),
  { maxKeys: 3 },
);

export const bodyArb: fc.Arbitrary<Body> = fc.oneof(
  fc.constant({ text: undefined, contentType: undefined, kind: "none" as const }),
  fc.constant({ text: "", contentType: "application/json", kind: "none" as const }),
  fc
    .dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 })
    .map((o) => ({
      text: JSON.stringify(o),
      contentType: "application/json",
      kind: "object" as const,
    })),
  fc
    .oneof(
      fc
        .jsonValue({ maxDepth: 2 })
        .filter((v) => v === null || typeof v !== "object" || Array.isArray(v)),
    )
    .map((v) => ({
      text: JSON.stringify(v),
      contentType: "application/json",
      kind: "json" as const,
    })),
  fc
    .oneof(
      fc.string({ minLength: 1, maxLength: 40 }),
      fc.constantFrom("{", "{]", '{"a":', "\u0000", "[1,"),
    )
    .filter((s) => {
      try {
        JSON.parse(s);
        return false;
      } catch {
        return s.trim() !== "";
      }
    })
    .map((text) => ({ text, contentType: "application/json", kind: "bad" as const })),
  fc
    .tuple(
      fc.constantFrom(
        "text/plain",
        "application/xml",
        "multipart/form-data",
        "application/x-www-form-urlencoded",
        "application/json; charset=latin1",
        "application/jsonx",
        "*/*",
      ),
      fc.string({ minLength: 1, maxLength: 20 }),
    )
    .map(([contentType, text]) => ({ text, contentType, kind: "bad" as const })),
  // Expanded to 70 KB when sent, so that counterexamples stay readable.
  fc.constant({ text: "HUGE", contentType: "application/json", kind: "huge" as const }),
);

/** Which credentials a request carries: mostly a valid token. */
export const authArb = fc.oneof(
  { weight: 8, arbitrary: fc.constant("valid" as const) },
  { weight: 1, arbitrary: fc.constantFrom("none", "garbage", "basic") },
);
