import { create } from "@bufbuild/protobuf";
import { TimestampSchema } from "@bufbuild/protobuf/wkt";
import fc from "fast-check";
import {
  AnswerSchema,
  PracticeSessionSchema,
  SnapshotQuestionSchema,
} from "../../gen/practice/v1/practice_session_service_pb.js";

/**
 * Random practice messages for the encoder tests (src/rpc/session-*.test.ts):
 * any UTF-16 text, zero and absent fields, values at the ends of their
 * ranges, unknown fields, sessions large enough for multi-byte lengths.
 */
// Any UTF-16 (lone surrogates too), sometimes long (lengths past one varint byte).
export const text = fc.oneof(
  fc.string({ unit: "binary", maxLength: 12 }),
  fc.string({ unit: "binary", minLength: 40, maxLength: 300 }),
  fc.string({ unit: "grapheme-ascii", minLength: 40, maxLength: 200 }),
  fc.constant(""),
);
export const int32 = fc.oneof(fc.integer(), fc.constant(0), fc.integer({ min: -1, max: 300 }));
export const absent = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: undefined, freq: 3 });
// A varint unknown field, as a newer schema's field would arrive.
export const unknown = fc.option(
  fc.array(
    fc
      .record({ no: fc.integer({ min: 100, max: 536870911 }), value: fc.integer({ min: 0 }) })
      .map(({ no, value }) => ({ no, wireType: 0, data: varint(value) })),
    { minLength: 1, maxLength: 2 },
  ),
  { nil: undefined, freq: 4 },
);

export const timestamp = fc
  .record({
    seconds: fc.oneof(
      fc.bigInt({ min: -62135596800n, max: 253402300799n }),
      fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
      fc.constant(0n),
    ),
    nanos: fc.oneof(fc.integer({ min: 0, max: 999999999 }), fc.constant(0)),
    $unknown: unknown,
  })
  .map((t) => create(TimestampSchema, t));
export const answer = fc
  .record({
    questionId: absent(text),
    userAnswer: absent(text),
    isCorrect: absent(fc.boolean()),
    answeredAt: absent(timestamp),
    $unknown: unknown,
  })
  .map((a) => create(AnswerSchema, a));
export const session = fc
  .record({
    id: text,
    quizId: text,
    startedAt: absent(timestamp),
    completedAt: absent(timestamp),
    totalQuestions: int32,
    correctAnswers: int32,
    scorePercentage: absent(int32),
    // Sometimes many answers: a session over 127 and over 16,383 bytes.
    answers: fc.oneof(
      { arbitrary: fc.array(answer, { maxLength: 4 }), weight: 20 },
      { arbitrary: fc.array(answer, { minLength: 100, maxLength: 150 }), weight: 1 },
    ),
    answeredQuestions: int32,
    expiresAt: absent(timestamp),
    $unknown: unknown,
  })
  .map((s) => create(PracticeSessionSchema, s));
export const question = fc
  .record({
    position: int32,
    questionId: absent(text),
    correctAnswer: absent(text),
    $unknown: unknown,
  })
  .map((q) => create(SnapshotQuestionSchema, q));

function varint(value: number): Uint8Array {
  const out: number[] = [];
  while (value > 0x7f) {
    out.push((value & 0x7f) | 0x80);
    value = Math.floor(value / 128);
  }
  out.push(value);
  return Uint8Array.from(out);
}
