import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  type Answer as AnswerMessage,
  AnswerSchema,
  type PracticeSession,
  PracticeSessionSchema,
  type SnapshotQuestion as SnapshotQuestionMessage,
  SnapshotQuestionSchema,
} from "../../gen/practice/v1/practice_session_service_pb.js";
import type {
  Answer,
  SessionProgress,
  SessionSummary,
  SnapshotQuestion,
} from "../domain/session.js";

/** A session as a protobuf message; `answers` empty for summaries. */
export function sessionToProto(
  session: SessionSummary & SessionProgress,
  answers: Answer[] = [],
): PracticeSession {
  return create(PracticeSessionSchema, {
    id: session.id,
    quizId: session.quizId,
    startedAt: timestampFromDate(session.startedAt),
    completedAt: session.completedAt ? timestampFromDate(session.completedAt) : undefined,
    totalQuestions: session.totalQuestions,
    correctAnswers: session.correctAnswers,
    scorePercentage: session.scorePercentage ?? undefined,
    answers: answers.map(answerToProto),
    answeredQuestions: session.answeredQuestions,
    expiresAt: session.expiresAt ? timestampFromDate(session.expiresAt) : undefined,
  });
}

/** A snapshot entry; `correctAnswer` is set only in a completed session's review. */
export function snapshotQuestionToProto(q: SnapshotQuestion): SnapshotQuestionMessage {
  return create(SnapshotQuestionSchema, {
    position: q.position,
    questionId: q.questionId ?? undefined,
    correctAnswer: q.correctAnswer ?? undefined,
  });
}

export function answerToProto(answer: Answer): AnswerMessage {
  return create(AnswerSchema, {
    questionId: answer.questionId ?? undefined,
    userAnswer: answer.userAnswer ?? undefined,
    isCorrect: answer.isCorrect ?? undefined,
    answeredAt: timestampFromDate(answer.answeredAt),
  });
}
