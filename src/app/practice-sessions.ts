import { v7 as uuidv7 } from "uuid";
import type { Db } from "../db/database.js";
import { isDuplicateKey, isForeignKeyViolation } from "../db/errors.js";
import { insertEvents } from "../db/outbox-repository.js";
import {
  countAnswer,
  deleteStaleSession,
  findLatestAnswerAt,
  findSessionWithAnswers,
  findSnapshot,
  findSnapshotQuestion,
  findStartState,
  insertAnswer,
  insertSessionCountingQuestions,
  insertSnapshot,
  lockSession,
  markCompleted,
  ONE_ACTIVE_SESSION_KEY,
  ONE_ANSWER_PER_QUESTION_KEY,
} from "../db/practice-sessions-repository.js";
import { primaryReads, type ReadRouting } from "../db/read-routing.js";
import { findSessionPage } from "../db/session-page.js";
import { type Clock, notBefore } from "../domain/clock.js";
import { decodeCursor, encodeCursor } from "../domain/cursor.js";
import { errors } from "../domain/errors.js";
import {
  answerSubmitted,
  type EventContext,
  sessionCompleted,
  sessionExpired,
  sessionStarted,
} from "../domain/events.js";
import { isCorrectAnswer } from "../domain/scoring.js";
import {
  type Answer,
  DEFAULT_PAGE_SIZE,
  isAcceptableAnswer,
  isDatabaseId,
  isSessionId,
  isStale,
  MAX_ANSWER_LENGTH,
  MAX_PAGE_SIZE,
  type Session,
  type SessionProgress,
  type SessionStatus,
  type SessionSummary,
  type SnapshotQuestion,
  staleCutoff,
  withProgress,
} from "../domain/session.js";
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from "./retry.js";
import { guard, retrying } from "./service-errors.js";

export interface ListSessionsInput {
  quizId: string;
  status?: SessionStatus;
  /** 1..MAX_PAGE_SIZE; undefined means DEFAULT_PAGE_SIZE. */
  limit?: number;
  /** A next_cursor from a previous page; undefined or "" for the first page. */
  cursor?: string;
}

export interface SessionPage {
  sessions: (SessionSummary & SessionProgress)[];
  /** Null on the last page. */
  nextCursor: string | null;
  hasMore: boolean;
}

export interface StartResult {
  session: Session & SessionProgress;
  /** True if this call created the session, false if it resumed one. */
  created: boolean;
  /** The snapshot, by position: the questions to answer (no correct answers). */
  questions: SnapshotQuestion[];
}

export interface SessionDetail {
  session: Session & SessionProgress;
  questions: SnapshotQuestion[];
}

export interface AnswerInput {
  sessionId: string;
  questionId: string;
  userAnswer: string;
}

export interface AnswerResult {
  answer: Answer;
  /** The session's counts after the answer. */
  session: SessionSummary & SessionProgress;
}

export interface PracticeSessionsOptions {
  /** Where ListSessions and GetSession read (default: `db`). */
  reads?: ReadRouting;
  /** How writes that lost a race run again (budget: the request's deadline). */
  retry?: RetryPolicy;
}

/**
 * The practice sessions use cases, shared by every transport. Each method
 * validates its input, talks to the database through the repository, and
 * throws only `ConnectError`s: database failures become `unavailable` (or
 * `internal`) with the cause kept for logs, never for the client.
 */
export class PracticeSessions {
  private readonly reads: ReadRouting;
  private readonly retry: RetryPolicy;

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly newSessionId: () => string = uuidv7,
    options: PracticeSessionsOptions = {},
  ) {
    this.reads = options.reads ?? primaryReads(db);
    this.retry = options.retry ?? DEFAULT_RETRY_POLICY;
  }

  /** What the event builders need (src/domain/events.ts): event ids and the user. */
  private events(userId: string): EventContext {
    return { newId: uuidv7, userId };
  }

  /** One page of the user's sessions on a quiz, newest first. */
  async listSessions(userId: string, input: ListSessionsInput): Promise<SessionPage> {
    const limit = input.limit ?? DEFAULT_PAGE_SIZE;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE_SIZE) {
      throw errors.invalidArgument(`limit must be an integer from 1 to ${MAX_PAGE_SIZE}`);
    }
    const after = input.cursor ? decodeCursor(input.cursor) : undefined;
    if (!isDatabaseId(input.quizId)) throw errors.quizNotFound();

    const sessions = await guard(() =>
      this.reads.read((db) =>
        findSessionPage(db, {
          userId,
          quizId: input.quizId,
          status: input.status,
          take: limit + 1,
          after,
        }),
      ),
    );
    if (sessions === undefined) throw errors.quizNotFound();
    const hasMore = sessions.length > limit;
    if (hasMore) sessions.length = limit;
    const last = sessions.at(-1);
    return {
      sessions: sessions.map(withProgress),
      hasMore,
      nextCursor: hasMore && last ? encodeCursor({ startedAt: last.startedAt, id: last.id }) : null,
    };
  }

  /**
   * Starts a session on a live quiz, or resumes the user's in-progress one.
   * A stale in-progress session (started over 7 days ago) is deleted first,
   * and a fresh one created. When starts race, the unique key lets one
   * insert; the others read the winner's session and resume it.
   */
  async startSession(userId: string, quizId: string): Promise<StartResult> {
    if (!isDatabaseId(quizId)) throw errors.quizNotFound();
    return retrying(
      () => this.startOnce(userId, quizId),
      this.retry,
      (err) => isDuplicateKey(err, ONE_ACTIVE_SESSION_KEY),
    );
  }

  private async startOnce(userId: string, quizId: string): Promise<StartResult> {
    const now = this.clock.now();
    const state = await findStartState(this.db, userId, quizId);
    if (state === undefined) throw errors.quizNotFound();
    const existing = state.inProgress;
    if (existing !== undefined) {
      if (!isStale(existing, now)) {
        const snapshot = await findSnapshot(this.db, existing.id);
        const questions = toSnapshot(snapshot, false);
        return { session: withProgress(existing), created: false, questions };
      }
      // The delete and its event commit together (or neither does).
      await this.db.transaction().execute(async (trx) => {
        const deleted = await deleteStaleSession(trx, existing.id, staleCutoff(now));
        if (deleted > 0) {
          await insertEvents(trx, [sessionExpired(this.events(userId), existing, now)]);
        }
      });
    }

    const id = this.newSessionId();
    const snapshot = await this.db.transaction().execute(async (trx) => {
      const inserted = await insertSessionCountingQuestions(trx, {
        id,
        user_id: userId,
        quiz_id: quizId,
        started_at: now,
      });
      if (inserted === 0) return [];
      await insertSnapshot(trx, id, quizId);
      const snapshot = await findSnapshot(trx, id);
      const started = { id, quizId, startedAt: now, totalQuestions: snapshot.length };
      await insertEvents(trx, [sessionStarted(this.events(userId), started)]);
      return snapshot;
    });
    if (snapshot.length === 0) throw errors.quizHasNoQuestions();
    return {
      created: true,
      session: withProgress({
        id,
        quizId,
        startedAt: now,
        completedAt: null,
        totalQuestions: snapshot.length,
        correctAnswers: 0,
        answeredQuestions: 0,
        answers: [],
      }),
      questions: toSnapshot(snapshot, false),
    };
  }

  /**
   * One of the user's sessions with its answers and snapshot, whatever became
   * of its quiz. Once the session is completed, each snapshot question carries
   * its current correct answer, for review; while in progress, none does.
   */
  async getSession(userId: string, sessionId: string): Promise<SessionDetail> {
    if (!isSessionId(sessionId)) throw errors.sessionNotFound();
    return guard(async () => {
      const [found, snapshot] = await this.reads.read((db) =>
        Promise.all([findSessionWithAnswers(db, userId, sessionId), findSnapshot(db, sessionId)]),
      );
      if (found === undefined) throw errors.sessionNotFound();
      const session = withProgress(found);
      return { session, questions: toSnapshot(snapshot, session.completedAt !== null) };
    });
  }

  /** The user's session with its answers, oldest first, or `not_found`. */
  private async readSession(userId: string, sessionId: string): Promise<Session & SessionProgress> {
    const session = await findSessionWithAnswers(this.db, userId, sessionId);
    if (session === undefined) throw errors.sessionNotFound();
    return withProgress(session);
  }

  /**
   * Records an answer to a question of the session's snapshot and, if it is
   * correct, counts it, in one transaction that holds the session's row lock:
   * an answer racing completion either lands first and counts, or sees the
   * session completed and is refused. Time is read under the lock, so no
   * answer is ever later than its session's completed_at.
   */
  async submitAnswer(userId: string, input: AnswerInput): Promise<AnswerResult> {
    if (!isSessionId(input.sessionId)) throw errors.sessionNotFound();
    if (!isDatabaseId(input.questionId)) throw errors.questionNotInSession();
    if (!isAcceptableAnswer(input.userAnswer)) {
      throw errors.invalidArgument(
        `user_answer must be 1 to ${MAX_ANSWER_LENGTH} characters and not only white space`,
      );
    }
    const submit = () =>
      this.db.transaction().execute(async (trx) => {
        const session = await lockSession(trx, userId, input.sessionId);
        if (session === undefined) throw errors.sessionNotFound();
        const now = this.clock.now();
        refuseUnlessWritable(session, now);
        const question = await findSnapshotQuestion(trx, input.sessionId, input.questionId);
        if (question === undefined) throw errors.questionNotInSession();
        const answer: Answer = {
          questionId: input.questionId,
          userAnswer: input.userAnswer,
          isCorrect: isCorrectAnswer(input.userAnswer, question.correct_answer),
          // Another replica's clock may be behind the one that started it.
          answeredAt: notBefore(now, session.startedAt),
        };
        await insertAnswer(trx, {
          session_id: input.sessionId,
          question_id: answer.questionId,
          user_answer: answer.userAnswer,
          is_correct: answer.isCorrect,
          answered_at: answer.answeredAt,
        }).catch((err: unknown) => {
          if (isDuplicateKey(err, ONE_ANSWER_PER_QUESTION_KEY)) throw errors.alreadyAnswered();
          // The question was deleted between the snapshot check and the insert.
          if (isForeignKeyViolation(err)) throw errors.questionNotInSession();
          throw err;
        });
        await countAnswer(trx, input.sessionId, answer.isCorrect === true);
        const after = withProgress({
          ...session,
          correctAnswers: session.correctAnswers + (answer.isCorrect ? 1 : 0),
          answeredQuestions: session.answeredQuestions + 1,
        });
        const submitted = {
          questionId: input.questionId,
          isCorrect: answer.isCorrect === true,
          answeredAt: answer.answeredAt,
        };
        await insertEvents(trx, [answerSubmitted(this.events(userId), after, submitted)]);
        return { answer, session: after };
      });
    return retrying(submit, this.retry);
  }

  /**
   * Completes an in-progress session: completed_at is set under the
   * session's row lock, and the score follows from it. Completing twice is
   * refused and changes nothing. Completion frees the (user, quiz) slot.
   */
  async completeSession(userId: string, sessionId: string): Promise<Session & SessionProgress> {
    if (!isSessionId(sessionId)) throw errors.sessionNotFound();
    await retrying(
      () =>
        this.db.transaction().execute(async (trx) => {
          const session = await lockSession(trx, userId, sessionId);
          if (session === undefined) throw errors.sessionNotFound();
          const now = this.clock.now();
          refuseUnlessWritable(session, now);
          // Clamped, not read from one clock: replicas' clocks disagree, and
          // the database's clock would add a query to every write.
          const latestAnswer = await findLatestAnswerAt(trx, sessionId);
          const completedAt = notBefore(now, session.startedAt, latestAnswer);
          await markCompleted(trx, sessionId, completedAt);
          await insertEvents(trx, [sessionCompleted(this.events(userId), session, completedAt)]);
        }),
      this.retry,
    );
    return guard(() => this.readSession(userId, sessionId));
  }
}

/**
 * Answers and completion need a session in progress that has not expired
 * (started over 7 days ago: the same boundary as the stale cleanup of a
 * start, which would delete it). Called under the session's row lock.
 */
function refuseUnlessWritable(session: SessionSummary, now: Date): void {
  if (session.completedAt !== null) throw errors.sessionCompleted();
  if (isStale(session, now)) throw errors.sessionExpired();
}

/** The snapshot as a caller may see it: correct answers only for a review. */
function toSnapshot(snapshot: SnapshotQuestion[], review: boolean): SnapshotQuestion[] {
  return review ? snapshot : snapshot.map((q) => ({ ...q, correctAnswer: null }));
}
