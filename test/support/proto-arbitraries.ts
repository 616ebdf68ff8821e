import { create, type DescField, type DescMessage, ScalarType } from "@bufbuild/protobuf";
import { type Timestamp, TimestampSchema } from "@bufbuild/protobuf/wkt";
import fc from "fast-check";
import {
  AnswerConflictSchema,
  NothingDueSchema,
  PracticeSessionService,
} from "../../gen/practice/v1/practice_session_service_pb.js";
import { QuizService } from "../../gen/practice/v1/quiz_service_pb.js";

/** Messages of the practice API, for the writers' differential tests (src/rpc/proto-*.test.ts). */

/** Every response message: each method's output, and the errors' details. */
export const OUTPUTS = [
  ...[PracticeSessionService, QuizService].flatMap((s) => s.methods.map((m) => m.output)),
  AnswerConflictSchema,
  NothingDueSchema,
];

export const MIN_SECONDS = -62_135_596_800n;
export const MAX_SECONDS = 253_402_300_799n;

export const timestamp: fc.Arbitrary<Timestamp> = fc
  .record({
    seconds: fc.oneof(
      fc.bigInt(MIN_SECONDS, MAX_SECONDS),
      fc.bigInt(-86_400n * 366n, 86_400n * 366n * 60n),
      fc.constantFrom(MIN_SECONDS, MAX_SECONDS, MIN_SECONDS - 1n, MAX_SECONDS + 1n, 0n, -1n),
    ),
    nanos: fc.oneof(
      fc.constant(0),
      fc.integer({ min: 0, max: 999 }).map((n) => n * 1_000_000),
      fc.integer({ min: 0, max: 999_999 }).map((n) => n * 1000),
      fc.integer({ min: 0, max: 999_999_999 }),
      fc.constantFrom(-1, 1_000_000_000),
    ),
  })
  .map((t) => create(TimestampSchema, t));

const INT32 = { min: -(2 ** 31), max: 2 ** 31 - 1 };

function scalar(type: ScalarType): fc.Arbitrary<unknown> {
  switch (type) {
    case ScalarType.STRING:
      return fc.oneof(fc.string({ unit: "binary" }), fc.constantFrom("", '"\\\u2028\u0000</'));
    case ScalarType.BOOL:
      return fc.boolean();
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return fc.integer({ min: 0, max: 2 ** 32 - 1 });
    default:
      return fc.oneof(fc.integer(INT32), fc.constantFrom(0, -0, 1, -1));
  }
}

/** An enum's values, an unknown number now and then (enums are open), and what protobuf-es refuses. */
function enumValue(values: readonly { number: number }[]): fc.Arbitrary<unknown> {
  return fc.oneof(
    fc.constantFrom(...values.map((v) => v.number)),
    fc.integer(INT32),
    fc.constantFrom(Number.NaN, 1.5, "1"),
  );
}

/** Any value of `field`, field kinds as the practice API's responses have them. */
function fieldValue(field: DescField, depth: number): fc.Arbitrary<unknown> {
  const message = (schema: DescMessage) =>
    schema.typeName === TimestampSchema.typeName ? timestamp : messageOf(schema, depth + 1);
  switch (field.fieldKind) {
    case "scalar":
      return scalar(field.scalar);
    case "enum":
      return enumValue(field.enum.values);
    case "message":
      return message(field.message);
    case "list":
      return fc.array(
        field.listKind === "message" ? message(field.message) : scalar(field.scalar as ScalarType),
        { maxLength: depth > 1 ? 0 : 3 },
      );
    default:
      throw new Error(`no arbitrary for ${field}`);
  }
}

export function messageOf(schema: DescMessage, depth = 0): fc.Arbitrary<object> {
  const fields = Object.fromEntries(schema.fields.map((f) => [f.localName, fieldValue(f, depth)]));
  return fc.record(fields, { requiredKeys: [] }).map((init) => create(schema, init as never));
}
