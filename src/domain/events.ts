import { create, type DescMessage, type MessageInitShape, toJson } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { CloudEvent } from "cloudevents";
import {
  AnswerSubmittedSchema,
  SessionCompletedSchema,
  SessionExpiredSchema,
  SessionStartedSchema,
} from "../../gen/practice/v1/events_pb.js";
import { scorePercentage } from "./scoring.js";
import type { Session, SessionSummary } from "./session.js";

/**
 * The events a committed change of a session produces: CloudEvents 1.0 in
 * JSON structured mode, with the protobuf payloads of
 * proto/practice/v1/events.proto as `data`. They are built here, written to
 * the outbox in the transaction of their change, and published as they are.
 */

/** The four event types; each is published on the NATS subject of the same name. */
export const EVENT_TYPES = [
  "practice.session.started",
  "practice.answer.submitted",
  "practice.session.completed",
  "practice.session.expired",
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** The CloudEvents `source` of every event. */
export const EVENT_SOURCE = "/practice-sessions";

/** An event ready for the outbox. */
export interface OutboxEvent {
  /** The CloudEvents `id` (a UUIDv7), also the JetStream message id. */
  id: string;
  type: EventType;
  /** The CloudEvents `subject`. */
  sessionId: string;
  /** When the change happened (the CloudEvents `time`). */
  time: Date;
  /** The whole CloudEvent, JSON (structured mode): what is published. */
  json: string;
}

/** What the builders need besides the change itself: ids and the user. */
export interface EventContext {
  newId: () => string;
  userId: string;
}

export function sessionStarted(
  ctx: EventContext,
  s: Pick<SessionSummary, "id" | "quizId" | "startedAt" | "totalQuestions">,
): OutboxEvent {
  return build(ctx, "practice.session.started", s.id, s.startedAt, SessionStartedSchema, {
    sessionId: s.id,
    userId: ctx.userId,
    quizId: s.quizId,
    startedAt: timestampFromDate(s.startedAt),
    totalQuestions: s.totalQuestions,
  });
}

export interface SubmittedAnswer {
  questionId: string;
  isCorrect: boolean;
  answeredAt: Date;
}

/** `session` holds the counts after the answer. */
export function answerSubmitted(
  ctx: EventContext,
  session: SessionSummary,
  answer: SubmittedAnswer,
): OutboxEvent {
  return build(
    ctx,
    "practice.answer.submitted",
    session.id,
    answer.answeredAt,
    AnswerSubmittedSchema,
    {
      sessionId: session.id,
      userId: ctx.userId,
      quizId: session.quizId,
      questionId: answer.questionId,
      isCorrect: answer.isCorrect,
      answeredAt: timestampFromDate(answer.answeredAt),
      correctAnswers: session.correctAnswers,
      totalQuestions: session.totalQuestions,
      answeredQuestions: session.answeredQuestions,
    },
  );
}

export function sessionCompleted(
  ctx: EventContext,
  session: SessionSummary,
  completedAt: Date,
): OutboxEvent {
  const score = scorePercentage(session.correctAnswers, session.totalQuestions, completedAt) ?? 0;
  return build(ctx, "practice.session.completed", session.id, completedAt, SessionCompletedSchema, {
    sessionId: session.id,
    userId: ctx.userId,
    quizId: session.quizId,
    startedAt: timestampFromDate(session.startedAt),
    completedAt: timestampFromDate(completedAt),
    totalQuestions: session.totalQuestions,
    correctAnswers: session.correctAnswers,
    scorePercentage: score,
  });
}

/** `session` as it was when stale cleanup deleted it, at `expiredAt`. */
export function sessionExpired(ctx: EventContext, session: Session, expiredAt: Date): OutboxEvent {
  return build(ctx, "practice.session.expired", session.id, expiredAt, SessionExpiredSchema, {
    sessionId: session.id,
    userId: ctx.userId,
    quizId: session.quizId,
    startedAt: timestampFromDate(session.startedAt),
    expiredAt: timestampFromDate(expiredAt),
    totalQuestions: session.totalQuestions,
    answeredQuestions: session.answeredQuestions,
    correctAnswers: session.correctAnswers,
  });
}

function build<Desc extends DescMessage>(
  ctx: EventContext,
  type: EventType,
  sessionId: string,
  time: Date,
  schema: Desc,
  payload: MessageInitShape<Desc>,
): OutboxEvent {
  const id = ctx.newId();
  // snake_case names and every field, false and 0 included: consumers read
  // `is_correct: false`, not a missing key.
  const data = toJson(schema, create(schema, payload), {
    useProtoFieldName: true,
    alwaysEmitImplicit: true,
  });
  const event = new CloudEvent({
    specversion: "1.0",
    id,
    source: EVENT_SOURCE,
    type,
    subject: sessionId,
    time: time.toISOString(),
    datacontenttype: "application/json",
    data,
  });
  return { id, type, sessionId, time, json: JSON.stringify(event) };
}
