import type { Timestamp } from "@bufbuild/protobuf/wkt";
import {
  type Answer as AnswerMessage,
  type DueQuestion as DueQuestionMessage,
  type ListDueQuestionsResponse,
  type PracticeSession,
  SessionMode,
  type SnapshotQuestion as SnapshotQuestionMessage,
} from "../../gen/practice/v1/practice_session_service_pb.js";
import type { DueQuestion, DueQuestions } from "../domain/memory.js";
import type {
  Answer,
  SessionProgress,
  SessionSummary,
  SnapshotQuestion,
} from "../domain/session.js";

// Literals rather than protobuf-es's `create`, which walks the schema twice per
// message; to-proto.test.ts checks they equal what `create` returns.

/** A session as a protobuf message; `answers` empty for summaries. */
export function sessionToProto(
  session: SessionSummary & SessionProgress,
  answers: Answer[] = [],
): PracticeSession {
  return {
    $typeName: "practice.v1.PracticeSession",
    id: session.id,
    quizId: session.quizId,
    startedAt: timestamp(session.startedAt),
    completedAt: session.completedAt ? timestamp(session.completedAt) : undefined,
    totalQuestions: session.totalQuestions,
    correctAnswers: session.correctAnswers,
    scorePercentage: session.scorePercentage ?? undefined,
    answers: answers.map(answerToProto),
    answeredQuestions: session.answeredQuestions,
    expiresAt: session.expiresAt ? timestamp(session.expiresAt) : undefined,
    mode: MODES[session.mode],
  };
}

const MODES = {
  full: SessionMode.FULL,
  review: SessionMode.REVIEW,
  missed: SessionMode.MISSED,
} as const;

/** A page of what is due on a quiz (ListDueQuestions). */
export function dueQuestionsToProto(
  due: DueQuestions & { nextCursor: string | undefined },
): ListDueQuestionsResponse {
  return {
    $typeName: "practice.v1.ListDueQuestionsResponse",
    questions: due.questions.map(dueQuestionToProto),
    dueCount: due.dueCount,
    newCount: due.newCount,
    nextDueAt: due.nextDueAt ? timestamp(due.nextDueAt) : undefined,
    nextCursor: due.nextCursor ?? "",
  };
}

function dueQuestionToProto(q: DueQuestion): DueQuestionMessage {
  return {
    $typeName: "practice.v1.DueQuestion",
    questionId: q.questionId,
    position: q.position,
    dueAt: timestamp(q.dueAt),
    lastAnsweredAt: timestamp(q.lastAnsweredAt),
    lastCorrect: q.lastCorrect,
    reps: q.reps,
    lapses: q.lapses,
  };
}

/** A snapshot entry; `correctAnswer` is set only in a completed session's review. */
export function snapshotQuestionToProto(q: SnapshotQuestion): SnapshotQuestionMessage {
  return {
    $typeName: "practice.v1.SnapshotQuestion",
    position: q.position,
    questionId: q.questionId ?? undefined,
    correctAnswer: q.correctAnswer ?? undefined,
  };
}

export function answerToProto(answer: Answer): AnswerMessage {
  return {
    $typeName: "practice.v1.Answer",
    questionId: answer.questionId ?? undefined,
    userAnswer: answer.userAnswer ?? undefined,
    isCorrect: answer.isCorrect ?? undefined,
    answeredAt: timestamp(answer.answeredAt),
  };
}

/** protobuf-es's `timestampFromDate`, without `create`. */
export function timestamp(date: Date): Timestamp {
  const ms = date.getTime();
  const seconds = Math.floor(ms / 1000);
  return {
    $typeName: "google.protobuf.Timestamp",
    seconds: BigInt(seconds),
    nanos: (ms - seconds * 1000) * 1000000,
  };
}
