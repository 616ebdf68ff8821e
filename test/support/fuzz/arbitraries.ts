import fc from "fast-check";
import { encodeCursor } from "../../../src/domain/cursor.js";
import { authArb, bodyArb, headersArb } from "./message-arbitraries.js";
import type { FuzzWorld } from "./world.js";

/** A quiz id and what it names: the oracle's input, not only the raw text. */
export type Quiz = {
  raw: string;
  kind: "live" | "no-questions" | "gone" | "unroutable" | "verbatim";
};

/** A query parameter's value and whether the contract accepts it. */
export type Param = { value: string; valid: boolean };

/**
 * The generators of request parts. Each value knows whether it is valid, so
 * that the oracle can say what the answer must be. Values that depend on the
 * world (live quiz ids, the victim's cursors) are read when generated; the
 * headers, bodies and credentials, which do not, are in message-arbitraries.ts.
 */
export function inputArbitraries(world: FuzzWorld) {
  const quizIdArb: fc.Arbitrary<Quiz> = fc.oneof(
    fc.constant(null).map(() => ({ raw: world.live.quizId, kind: "live" as const })),
    fc.constant(null).map(() => ({ raw: world.noQuestions.quizId, kind: "no-questions" as const })),
    fc.constantFrom("deleted", "guide").map((w) => ({
      raw: w === "deleted" ? world.deleted.quizId : world.guideDeleted.quizId,
      kind: "gone" as const,
    })),
    fc
      .oneof(
        fc.constantFrom(
          "0",
          "-1",
          "00001",
          "1.0",
          "1e3",
          " 1",
          "1 ",
          "0x10",
          "+1",
          "18446744073709551615",
          "18446744073709551616",
          "99999999999999999999999",
          "1 OR 1=1",
          "1' OR '1'='1",
          "1; DROP TABLE practice_sessions; --",
          "1/**/UNION/**/SELECT/**/user_id/**/FROM/**/practice_sessions",
          "%00",
          "null",
          "undefined",
          "NaN",
          "Infinity",
          "١٢٣",
          "１２３",
          "💥",
          "é",
          "\u0000",
          "..",
          ".",
        ),
        fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }).map(String),
        fc.string({ unit: "grapheme", maxLength: 40 }),
        fc.string({ unit: "binary", minLength: 1, maxLength: 20 }),
      )
      .filter(
        (s) =>
          s !== world.live.quizId &&
          s !== world.noQuestions.quizId &&
          s !== "" &&
          s !== "." &&
          s !== "..",
      )
      .map((raw) => ({ raw, kind: "gone" as const })),
    // Sent as they are: malformed or surprising percent-encoding.
    fc
      .constantFrom(
        "%",
        "%zz",
        "%E0%A4%A",
        "%C0%AF",
        "%00",
        "%2F",
        "1%2F1",
        "%2e%2e",
        "%F0%9F%92",
        "%FF",
      )
      .map((raw) => ({ raw, kind: "verbatim" as const })),
    fc.constantFrom("", ".", "..", "9".repeat(250), "a".repeat(1000)).map((raw) => ({
      raw,
      kind: "unroutable" as const,
    })),
  );

  const statusArb: fc.Arbitrary<Param> = fc.oneof(
    fc.constantFrom("active", "completed").map((value) => ({ value, valid: true })),
    fc
      .oneof(
        fc.constantFrom(
          "",
          "ACTIVE",
          "Active",
          "all",
          "both",
          "active ",
          "in_progress",
          "1",
          "null",
          "active,completed",
        ),
        fc.string({ maxLength: 12 }),
      )
      .filter((s) => s !== "active" && s !== "completed")
      .map((value) => ({ value, valid: false })),
  );
  const limitArb: fc.Arbitrary<Param> = fc.oneof(
    fc.integer({ min: 1, max: 100 }).map((n) => ({ value: String(n), valid: true })),
    fc.constantFrom("001", "0100").map((value) => ({ value, valid: true })),
    fc
      .oneof(
        fc.integer({ min: -1000, max: 0 }).map(String),
        fc.integer({ min: 101, max: 2 ** 31 }).map(String),
        fc.constantFrom(
          "",
          "1e2",
          " 5",
          "5 ",
          "0x10",
          "1.5",
          "NaN",
          "Infinity",
          "-0",
          "99999999999999999999",
          "+5",
        ),
        fc.string({ maxLength: 8 }).filter((s) => !/^[0-9]+$/.test(s)),
      )
      .map((value) => ({ value, valid: false })),
  );
  const cursorArb: fc.Arbitrary<Param> = fc.oneof(
    fc.constant("").map((value) => ({ value, valid: true })),
    fc.nat().map((i) => ({
      value: world.victimCursors[i % world.victimCursors.length] ?? "",
      valid: true,
    })),
    fc
      .record({ ms: fc.integer({ min: 0, max: 253402300799999 }), id: fc.uuid() })
      .map(({ ms, id }) => ({ value: encodeCursor({ startedAt: new Date(ms), id }), valid: true })),
    fc
      .oneof(
        fc
          .uint8Array({ minLength: 1, maxLength: 80 })
          .map((b) => Buffer.from(b).toString("base64url")),
        fc
          .integer({ min: 1, max: 40 })
          .map((cut) => (world.victimCursors[0] ?? "x").slice(0, -cut)),
        fc.constant(null).map(() => `${world.victimCursors[0]}A`),
        fc.constantFrom(
          Buffer.from("v1.-1.01900000-0000-7000-8000-000000000000").toString("base64url"),
          Buffer.from("v1.253402300800000.01900000-0000-7000-8000-000000000000").toString(
            "base64url",
          ),
          Buffer.from("v2.1.01900000-0000-7000-8000-000000000000").toString("base64url"),
          Buffer.from("v1.1.' OR 1=1 --").toString("base64url"),
          Buffer.from("v1.1.01900000-0000-7000-8000-000000000000.x").toString("base64url"),
          "A".repeat(201),
          "=",
          "dj=",
          "null",
        ),
        fc.string({ maxLength: 60 }),
      )
      .filter((s) => s !== "" && !world.victimCursors.includes(s))
      .map((value) => ({ value, valid: false })),
  );

  const queryArb = fc
    .record(
      {
        status: fc.array(statusArb, { maxLength: 2 }),
        limit: fc.array(limitArb, { maxLength: 2 }),
        cursor: fc.array(cursorArb, { maxLength: 2 }),
        junk: fc.array(fc.tuple(fc.string({ maxLength: 6 }), fc.string({ maxLength: 6 })), {
          maxLength: 2,
        }),
      },
      { requiredKeys: [] },
    )
    .map((q) => {
      const pairs: [string, string][] = [];
      let valid = true;
      for (const key of ["status", "limit", "cursor"] as const) {
        const values = q[key] ?? [];
        if (values.length > 1 || values.some((v) => !v.valid)) valid = false;
        for (const v of values) pairs.push([key, v.value]);
      }
      for (const [k, v] of q.junk ?? []) {
        if (!["status", "limit", "cursor"].includes(k.trim())) pairs.push([`x${k}`, v]);
      }
      return { pairs, valid };
    });

  return {
    quizId: quizIdArb,
    status: statusArb,
    limit: limitArb,
    cursor: cursorArb,
    query: queryArb,
    headers: headersArb,
    body: bodyArb,
    auth: authArb,
  };
}

export type InputArbitraries = ReturnType<typeof inputArbitraries>;
