import { isDuplicateKey, isForeignKeyViolation } from "../db/errors.js";
import { insertEvents } from "../db/outbox-repository.js";
import {
  countAnswer,
  findLatestAnswerAt,
  findSessionWithAnswers,
  findSnapshotQuestion,
  insertAnswer,
  lockSession,
  markCompleted,
  ONE_ANSWER_PER_QUESTION_KEY,
} from "../db/practice-sessions-repository.js";
import { notBefore } from "../domain/clock.js";
import { answerSubmitted, sessionCompleted } from "../domain/events.js";
import { isCorrectAnswer } from "../domain/scoring.js";
import {
  type Answer,
  isAcceptableAnswer,
  isDatabaseId,
  isSessionId,
  isStale,
  MAX_ANSWER_LENGTH,
  type Session,
  type SessionProgress,
  type SessionSummary,
  withProgress,
} from "../domain/session.js";
import { outboxEvent } from "../events/cloud-event.js";
import { errors } from "./errors.js";
import { guard, retrying } from "./service-errors.js";
import type { SessionsContext } from "./sessions-context.js";

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

/**
 * Records an answer to a question of the session's snapshot and, if it is
 * correct, counts it, in one transaction that holds the session's row lock:
 * an answer racing completion either lands first and counts, or sees the
 * session completed and is refused. Time is read under the lock, so no
 * answer is ever later than its session's completed_at.
 */
export async function submitAnswer(
  { db, clock, retry }: SessionsContext,
  userId: string,
  input: AnswerInput,
): Promise<AnswerResult> {
  if (!isSessionId(input.sessionId)) throw errors.sessionNotFound();
  if (!isDatabaseId(input.questionId)) throw errors.questionNotInSession();
  if (!isAcceptableAnswer(input.userAnswer)) {
    throw errors.invalidArgument(
      `user_answer must be 1 to ${MAX_ANSWER_LENGTH} characters and not only white space`,
    );
  }
  const submit = () =>
    db.transaction().execute(async (trx) => {
      const session = await lockSession(trx, userId, input.sessionId);
      if (session === undefined) throw errors.sessionNotFound();
      const now = clock.now();
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
      await insertEvents(trx, [outboxEvent(answerSubmitted(userId, after, submitted))]);
      return { answer, session: after };
    });
  return retrying(submit, retry);
}

/**
 * Completes an in-progress session: completed_at is set under the
 * session's row lock, and the score follows from it. Completing twice is
 * refused and changes nothing. Completion frees the (user, quiz) slot.
 */
export async function completeSession(
  { db, clock, retry }: SessionsContext,
  userId: string,
  sessionId: string,
): Promise<Session & SessionProgress> {
  if (!isSessionId(sessionId)) throw errors.sessionNotFound();
  await retrying(
    () =>
      db.transaction().execute(async (trx) => {
        const session = await lockSession(trx, userId, sessionId);
        if (session === undefined) throw errors.sessionNotFound();
        const now = clock.now();
        refuseUnlessWritable(session, now);
        // Clamped, not read from one clock: replicas' clocks disagree, and
        // the database's clock would add a query to every write.
        const latestAnswer = await findLatestAnswerAt(trx, sessionId);
        const completedAt = notBefore(now, session.startedAt, latestAnswer);
        await markCompleted(trx, sessionId, completedAt);
        await insertEvents(trx, [outboxEvent(sessionCompleted(userId, session, completedAt))]);
      }),
    retry,
  );
  // The user's session with its answers, oldest first, read after the commit.
  return guard(async () => {
    const session = await findSessionWithAnswers(db, userId, sessionId);
    if (session === undefined) throw errors.sessionNotFound();
    return withProgress(session);
  });
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
