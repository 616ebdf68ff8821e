import { scorePercentage } from "./scoring.js";
import type { Session, SessionMode, SessionSummary } from "./session.js";

/**
 * The events a committed change of a session produces, as plain facts. The
 * edge that publishes them (src/db/outbox-event.ts) encodes each as a
 * CloudEvent with the protobuf payload of proto/practice/v1/events.proto.
 */

/** The four event types; each is published on the NATS subject of the same name. */
const EVENT_TYPES = [
  "practice.session.started",
  "practice.answer.submitted",
  "practice.session.completed",
  "practice.session.expired",
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** Fields every payload carries. */
interface Common {
  sessionId: string;
  userId: string;
  quizId: string;
  totalQuestions: number;
}

export interface SessionStartedData extends Common {
  startedAt: Date;
  mode: SessionMode;
}
export interface AnswerSubmittedData extends Common {
  questionId: string;
  isCorrect: boolean;
  answeredAt: Date;
  correctAnswers: number;
  answeredQuestions: number;
}
export interface SessionCompletedData extends Common {
  startedAt: Date;
  completedAt: Date;
  correctAnswers: number;
  scorePercentage: number;
  mode: SessionMode;
}
export interface SessionExpiredData extends Common {
  startedAt: Date;
  expiredAt: Date;
  answeredQuestions: number;
  correctAnswers: number;
}

/** A change of a session: its type, when it happened and what the payload says. */
export type SessionEvent =
  | { type: "practice.session.started"; time: Date; data: SessionStartedData }
  | { type: "practice.answer.submitted"; time: Date; data: AnswerSubmittedData }
  | { type: "practice.session.completed"; time: Date; data: SessionCompletedData }
  | { type: "practice.session.expired"; time: Date; data: SessionExpiredData };

export function sessionStarted(
  userId: string,
  s: Pick<SessionSummary, "id" | "quizId" | "startedAt" | "totalQuestions" | "mode">,
): SessionEvent {
  return {
    type: "practice.session.started",
    time: s.startedAt,
    data: {
      sessionId: s.id,
      userId,
      quizId: s.quizId,
      startedAt: s.startedAt,
      totalQuestions: s.totalQuestions,
      mode: s.mode,
    },
  };
}

export interface SubmittedAnswer {
  questionId: string;
  isCorrect: boolean;
  answeredAt: Date;
}

/** `session` holds the counts after the answer. */
export function answerSubmitted(
  userId: string,
  session: SessionSummary,
  answer: SubmittedAnswer,
): SessionEvent {
  return {
    type: "practice.answer.submitted",
    time: answer.answeredAt,
    data: {
      sessionId: session.id,
      userId,
      quizId: session.quizId,
      questionId: answer.questionId,
      isCorrect: answer.isCorrect,
      answeredAt: answer.answeredAt,
      correctAnswers: session.correctAnswers,
      totalQuestions: session.totalQuestions,
      answeredQuestions: session.answeredQuestions,
    },
  };
}

export function sessionCompleted(
  userId: string,
  session: SessionSummary,
  completedAt: Date,
): SessionEvent {
  return {
    type: "practice.session.completed",
    time: completedAt,
    data: {
      sessionId: session.id,
      userId,
      quizId: session.quizId,
      startedAt: session.startedAt,
      completedAt,
      totalQuestions: session.totalQuestions,
      correctAnswers: session.correctAnswers,
      scorePercentage:
        scorePercentage(session.correctAnswers, session.totalQuestions, completedAt) ?? 0,
      mode: session.mode,
    },
  };
}

/** `session` as it was when stale cleanup deleted it, at `expiredAt`. */
export function sessionExpired(userId: string, session: Session, expiredAt: Date): SessionEvent {
  return {
    type: "practice.session.expired",
    time: expiredAt,
    data: {
      sessionId: session.id,
      userId,
      quizId: session.quizId,
      startedAt: session.startedAt,
      expiredAt,
      totalQuestions: session.totalQuestions,
      answeredQuestions: session.answeredQuestions,
      correctAnswers: session.correctAnswers,
    },
  };
}
