import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  type Answer as AnswerMessage,
  AnswerSchema,
  type PracticeSession,
  PracticeSessionSchema,
} from "../../gen/practice/v1/practice_session_service_pb.js";
import { scorePercentage } from "../domain/scoring.js";
import type { Answer, SessionSummary } from "../domain/session.js";

/** A session as a protobuf message; `answers` empty for summaries. */
export function sessionToProto(session: SessionSummary, answers: Answer[] = []): PracticeSession {
  return create(PracticeSessionSchema, {
    id: session.id,
    quizId: session.quizId,
    startedAt: timestampFromDate(session.startedAt),
    completedAt: session.completedAt ? timestampFromDate(session.completedAt) : undefined,
    totalQuestions: session.totalQuestions,
    correctAnswers: session.correctAnswers,
    scorePercentage:
      scorePercentage(session.correctAnswers, session.totalQuestions, session.completedAt) ??
      undefined,
    answers: answers.map(answerToProto),
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
