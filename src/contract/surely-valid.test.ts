import { create, type DescField, type DescMessage, ScalarType } from "@bufbuild/protobuf";
import { createValidator } from "@bufbuild/protovalidate";
import { describe, expect, it } from "vitest";
import { PracticeSessionService } from "../../gen/practice/v1/practice_session_service_pb.js";
import { QuizService } from "../../gen/practice/v1/quiz_service_pb.js";
import { compiles, surelyValid } from "./surely-valid.js";

const requests = [...PracticeSessionService.methods, ...QuizService.methods].map((m) => m.input);
const validator = createValidator();

/** Values at and around every bound the protos state, and text RE2 and JS read apart. */
const STRINGS = [
  "",
  "1",
  " ",
  "\u00a0",
  "\u2028",
  "\u200b",
  "\t\n\v\f\r",
  "\u0085",
  "😀",
  "x".repeat(64),
  "x".repeat(65),
  "😀".repeat(32),
  "😀".repeat(33),
  "x".repeat(128),
  "x".repeat(129),
  "x".repeat(1000),
  "x".repeat(1001),
  "😀".repeat(1000),
  "😀".repeat(1001),
];
const NUMBERS = [-2147483648, -1, 0, 1, 2, 3, 4, 20, 99, 100, 101, 2147483647];

function valuesOf(field: DescField): unknown[] {
  if (field.fieldKind === "enum") return NUMBERS;
  if (field.fieldKind === "scalar" && field.scalar === ScalarType.STRING) return STRINGS;
  if (field.fieldKind === "scalar" && field.scalar === ScalarType.INT32) return NUMBERS;
  return [];
}

/** Every field at each of its values, the others at a valid value of theirs when one is found. */
function* messages(schema: DescMessage) {
  const valid: Record<string, unknown> = {};
  for (const field of schema.fields) {
    const good = valuesOf(field).find((v) =>
      protovalidateSays(schema, { ...valid, [field.localName]: v }, field),
    );
    if (good !== undefined) valid[field.localName] = good;
  }
  yield valid;
  for (const field of schema.fields) {
    for (const v of valuesOf(field)) yield { ...valid, [field.localName]: v };
  }
}

/** Whether protovalidate finds `init` valid (only `field`'s violations, if given). */
function protovalidateSays(
  schema: DescMessage,
  init: Record<string, unknown>,
  field?: DescField,
): boolean {
  const result = validator.validate(schema, create(schema, init));
  if (result.kind === "error") throw result.error;
  const violations = result.violations ?? [];
  return violations.every((v) => field !== undefined && v.field[0] !== field);
}

describe("surelyValid", () => {
  it("compiles every request type of both services", () => {
    expect(requests.filter((schema) => !compiles(schema)).map((s) => s.typeName)).toEqual([]);
  });

  it.each(requests.map((schema) => [schema.typeName, schema] as const))(
    "agrees with protovalidate on %s, value by value at every bound",
    (_, schema) => {
      let checked = 0;
      for (const init of messages(schema)) {
        const message = create(schema, init);
        expect({ init, sure: surelyValid(schema, message) }).toEqual({
          init,
          sure: protovalidateSays(schema, init),
        });
        checked++;
      }
      expect(checked).toBeGreaterThan(1);
    },
  );

  it("is never sure of a type it does not compile (a list of messages)", () => {
    const schema = PracticeSessionService.method.listSessions.output;
    expect(compiles(schema)).toBe(false);
    expect(surelyValid(schema, create(schema))).toBe(false);
  });
});
