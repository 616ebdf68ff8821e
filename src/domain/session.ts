/**
 * The practice session as the application sees it, whatever the transport.
 */

import { scorePercentage } from "./scoring.js";

export interface Answer {
  /** Null once the question is hard-deleted. */
  questionId: string | null;
  userAnswer: string | null;
  isCorrect: boolean | null;
  answeredAt: Date;
}

/**
 * What a session's snapshot holds: the whole quiz, the learner's questions due
 * at start ("review"), or the questions they did not answer correctly in their
 * latest completed session of the quiz ("missed").
 */
export type SessionMode = "full" | "review" | "missed";

export interface SessionSummary {
  id: string;
  quizId: string;
  startedAt: Date;
  completedAt: Date | null;
  totalQuestions: number;
  correctAnswers: number;
  /** How many answers the session holds. */
  answeredQuestions: number;
  mode: SessionMode;
}

export interface Session extends SessionSummary {
  /** Oldest first. */
  answers: Answer[];
}

/** One entry of a session's snapshot. */
export interface SnapshotQuestion {
  /** 1-based order in the quiz at session start. */
  position: number;
  /** Null once the question is hard-deleted. */
  questionId: string | null;
  /**
   * The question's current correct answer, for review: null while the
   * session is in progress, and for a deleted question.
   */
  correctAnswer: string | null;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Whether `raw` has the shape of a session id (lowercase UUID text, as the service makes them). */
export function isSessionId(raw: string): boolean {
  return UUID.test(raw);
}

/** The list's status filter; `undefined` means both. */
export type SessionStatus = "active" | "completed";

/** A page's size when the request leaves it out; its range is the requests' rule (the protos). */
export const DEFAULT_PAGE_SIZE = 20;

/** In-progress sessions started more than this long ago are stale. */
export const STALE_AFTER_MS = 7 * 24 * 60 * 60 * 1000;

/**
 * Sessions in progress that started before this instant are stale: deleted by
 * the next start on their quiz. A session exactly 7 days old is not stale yet.
 */
export function staleCutoff(now: Date): Date {
  return new Date(now.getTime() - STALE_AFTER_MS);
}

/** True if `session` is in progress and started before the stale cutoff. */
export function isStale(
  session: Pick<SessionSummary, "startedAt" | "completedAt">,
  now: Date,
): boolean {
  return session.completedAt === null && session.startedAt < staleCutoff(now);
}

/**
 * When an in-progress session expires: started_at + 7 days, after which it is
 * stale (isStale). Null once completed.
 */
export function expiresAt(session: Pick<SessionSummary, "startedAt" | "completedAt">): Date | null {
  if (session.completedAt !== null) return null;
  return new Date(session.startedAt.getTime() + STALE_AFTER_MS);
}

/** What follows from a session's counts and times, for every transport alike. */
export interface SessionProgress {
  /** The spec's score once completed; null while in progress (domain/scoring.ts). */
  scorePercentage: number | null;
  /** When an in-progress session expires; null once completed. */
  expiresAt: Date | null;
}

/** `session` with its score and expiry: the one place they are derived. */
export function withProgress<S extends SessionSummary>(session: S): S & SessionProgress {
  return {
    ...session,
    scorePercentage: scorePercentage(
      session.correctAnswers,
      session.totalQuestions,
      session.completedAt,
    ),
    expiresAt: expiresAt(session),
  };
}

const MAX_UNSIGNED_BIGINT = 18446744073709551615n;

/**
 * Whether `raw` can name a row: ids are BIGINT UNSIGNED, decimal on the wire.
 * Anything else names no quiz, and callers answer it like a missing quiz.
 */
export function isDatabaseId(raw: string): boolean {
  return /^[1-9][0-9]{0,19}$/.test(raw) && BigInt(raw) <= MAX_UNSIGNED_BIGINT;
}

/** The snapshot as a caller may see it: correct answers only for a review. */
export function toSnapshot(snapshot: SnapshotQuestion[], review: boolean): SnapshotQuestion[] {
  return review ? snapshot : snapshot.map((q) => ({ ...q, correctAnswer: null }));
}
