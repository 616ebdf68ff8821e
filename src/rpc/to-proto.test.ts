import { create, equals, toBinary, toJsonString } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  AnswerSchema,
  PracticeSessionSchema,
  SessionMode,
  SnapshotQuestionSchema,
} from "../../gen/practice/v1/practice_session_service_pb.js";
import type { Answer } from "../domain/session.js";
import { sessionToProto, snapshotQuestionToProto } from "./to-proto.js";

const date = fc.date({
  min: new Date("0001-01-01T00:00:00Z"),
  max: new Date("9999-12-31T23:59:59Z"),
  noInvalidDate: true,
});
const orNull = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: null });
const answer = fc.record({
  questionId: orNull(fc.string()),
  userAnswer: orNull(fc.string()),
  isCorrect: orNull(fc.boolean()),
  answeredAt: date,
});
const session = fc.record({
  id: fc.string(),
  quizId: fc.string(),
  startedAt: date,
  completedAt: orNull(date),
  totalQuestions: fc.nat(1000),
  correctAnswers: fc.nat(1000),
  answeredQuestions: fc.nat(1000),
  scorePercentage: orNull(fc.nat(100)),
  expiresAt: orNull(date),
  mode: fc.constantFrom("full" as const, "review" as const),
});

/** What `create` makes of the same session: the reference. */
function created(s: typeof session extends fc.Arbitrary<infer T> ? T : never, answers: Answer[]) {
  return create(PracticeSessionSchema, {
    ...s,
    startedAt: timestampFromDate(s.startedAt),
    completedAt: s.completedAt ? timestampFromDate(s.completedAt) : undefined,
    scorePercentage: s.scorePercentage ?? undefined,
    expiresAt: s.expiresAt ? timestampFromDate(s.expiresAt) : undefined,
    mode: s.mode === "review" ? SessionMode.REVIEW : SessionMode.FULL,
    answers: answers.map((a) =>
      create(AnswerSchema, {
        questionId: a.questionId ?? undefined,
        userAnswer: a.userAnswer ?? undefined,
        isCorrect: a.isCorrect ?? undefined,
        answeredAt: timestampFromDate(a.answeredAt),
      }),
    ),
  });
}

describe("the message literals of to-proto.ts", () => {
  it("are the messages create() makes: equal, same binary, same JSON", () => {
    fc.assert(
      fc.property(session, fc.array(answer, { maxLength: 5 }), (s, answers) => {
        const ours = sessionToProto(s, answers);
        const reference = created(s, answers);
        expect(equals(PracticeSessionSchema, ours, reference)).toBe(true);
        expect(toBinary(PracticeSessionSchema, ours)).toEqual(
          toBinary(PracticeSessionSchema, reference),
        );
        expect(toJsonString(PracticeSessionSchema, ours)).toBe(
          toJsonString(PracticeSessionSchema, reference),
        );
      }),
    );
  });

  it("make snapshot questions as create() does", () => {
    fc.assert(
      fc.property(
        fc.record({
          position: fc.nat(),
          questionId: orNull(fc.string()),
          correctAnswer: orNull(fc.string()),
        }),
        (q) => {
          const ours = snapshotQuestionToProto(q);
          const reference = create(SnapshotQuestionSchema, {
            position: q.position,
            questionId: q.questionId ?? undefined,
            correctAnswer: q.correctAnswer ?? undefined,
          });
          expect(equals(SnapshotQuestionSchema, ours, reference)).toBe(true);
          expect(toJsonString(SnapshotQuestionSchema, ours)).toBe(
            toJsonString(SnapshotQuestionSchema, reference),
          );
        },
      ),
    );
  });
});
