import { inAnswerTransaction, writeAnswer } from "../db/answer-writes.js";
import { isLostRace } from "../db/errors.js";
import { recordEvents } from "../db/outbox-event.js";
import {
  countAnswer,
  countAnswerIfUnchanged,
  findAnswerContext,
  findLatestAnswerAt,
  findSessionForAnswer,
  findSessionWithAnswers,
  findUnanswered,
  lockSession,
  markCompleted,
} from "../db/practice-sessions-repository.js";
import { insertMemories, saveMemory } from "../db/question-memory-repository.js";
import { inTransaction, type Work } from "../db/unit-of-work.js";
import { notBefore } from "../domain/clock.js";
import { answerSubmitted, sessionCompleted } from "../domain/events.js";
import { rememberAnswer } from "../domain/memory.js";
import { isCorrectAnswer } from "../domain/scoring.js";
import {
  type Answer,
  isDatabaseId,
  isSessionId,
  isStale,
  type Session,
  type SessionProgress,
  type SessionSummary,
  withProgress,
} from "../domain/session.js";
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
  /** False when the question had exactly this answer already: a retry, which wrote nothing. */
  created: boolean;
}

/**
 * Records an answer and counts it in one transaction under the session's row
 * lock: an answer racing completion either lands first or is refused, and none
 * is later than completed_at. The same user_answer again is a retry (the stored
 * answer, no write); a different one is `already_exists` with the stored answer.
 */
export async function submitAnswer(
  { db, clock, retry }: SessionsContext,
  userId: string,
  input: AnswerInput,
): Promise<AnswerResult> {
  if (!isSessionId(input.sessionId)) throw errors.sessionNotFound();
  if (!isDatabaseId(input.questionId)) throw errors.questionNotInSession();
  let attempts = 0;
  // On the connections that may send the writes in one request (answer-writes.ts).
  const submit = () =>
    inAnswerTransaction(db, async (trx): Promise<AnswerResult> => {
      // The first attempt reads without a lock and counts the answer only if
      // the session is as read (one round trip fewer); one that finds it
      // moved runs again under the session's lock, as every later one does.
      const optimistic = attempts++ === 0;
      const read = optimistic
        ? await findSessionForAnswer(trx, userId, input.sessionId, input.questionId)
        : await lockedForAnswer(trx, userId, input.sessionId, input.questionId);
      if (read === undefined) throw errors.sessionNotFound();
      const { session, question } = read;
      const stored = question?.answer;
      if (stored !== undefined) {
        if (stored.userAnswer !== input.userAnswer) throw errors.answerConflict(stored);
        return { answer: stored, session: withProgress(session), created: false };
      }
      const now = clock.now();
      refuseUnlessWritable(session, now);
      if (question === undefined) throw errors.questionNotInSession();
      const answer: Answer = {
        questionId: input.questionId,
        userAnswer: input.userAnswer,
        isCorrect: isCorrectAnswer(input.userAnswer, question.correctAnswer),
        // Another replica's clock may be behind the one that started it.
        answeredAt: notBefore(now, session.startedAt),
      };
      // Counted first: the optimistic update takes the session's lock before
      // anything else is written (an answer's row checks its session's key).
      const correct = answer.isCorrect === true;
      if (!optimistic) await countAnswer(trx, input.sessionId, correct);
      else await countAnswerIfUnchanged(trx, session, correct);
      const after = withProgress({
        ...session,
        correctAnswers: session.correctAnswers + (correct ? 1 : 0),
        answeredQuestions: session.answeredQuestions + 1,
      });
      const submitted = {
        questionId: input.questionId,
        isCorrect: correct,
        answeredAt: answer.answeredAt,
      };
      await writeAnswer(trx, {
        sessionId: input.sessionId,
        answer,
        // The learner's memory of the question moves with every stored answer (domain/memory.ts).
        memory: {
          key: { userId, quizId: session.quizId, questionId: input.questionId },
          previous: question.memory,
          next: rememberAnswer(question.memory, correct, answer.answeredAt),
        },
        events: [answerSubmitted(userId, after, submitted)],
      });
      return { answer, session: after, created: true };
    });
  // Another node stored an answer or a first memory of the question meanwhile, the session or
  // memory moved, or the question was deleted since the check: the next attempt reads it and
  // decides (a deleted question is then not in the session).
  return retrying(submit, retry, isLostRace);
}

/** findSessionForAnswer's answer, read under the session's row lock. */
async function lockedForAnswer(trx: Work, userId: string, sessionId: string, questionId: string) {
  const session = await lockSession(trx, userId, sessionId);
  if (session === undefined) return undefined;
  return { session, question: await findAnswerContext(trx, userId, sessionId, questionId) };
}

/**
 * Completes an in-progress session under its row lock; completing a completed
 * session is a retry that returns it unchanged. Frees the (user, quiz) slot.
 */
export async function completeSession(
  { db, clock, retry }: SessionsContext,
  userId: string,
  sessionId: string,
): Promise<Session & SessionProgress> {
  if (!isSessionId(sessionId)) throw errors.sessionNotFound();
  await retrying(
    () =>
      inTransaction(db, async (trx) => {
        const session = await lockSession(trx, userId, sessionId);
        if (session === undefined) throw errors.sessionNotFound();
        if (session.completedAt !== null) return;
        const now = clock.now();
        if (isStale(session, now)) throw errors.sessionExpired();
        // Clamped, not read from one clock: replicas' clocks disagree, and
        // the database's clock would add a query to every write.
        const latestAnswer = await findLatestAnswerAt(trx, sessionId);
        const completedAt = notBefore(now, session.startedAt, latestAnswer);
        await markCompleted(trx, sessionId, completedAt);
        await rememberUnanswered(trx, userId, session, completedAt);
        await recordEvents(trx, [sessionCompleted(userId, session, completedAt)]);
      }),
    retry,
    // A memory row another answer moved meanwhile: the next attempt reads it.
    isLostRace,
  );
  // The user's session with its answers, oldest first, read after the commit.
  return guard(async () => {
    const session = await findSessionWithAnswers(db, userId, sessionId);
    if (session === undefined) throw errors.sessionNotFound();
    return withProgress(session);
  });
}

/**
 * Each question the completed session left unanswered enters the learner's
 * memory as missed (Again at `completedAt`, no answer row), as a wrong answer
 * would: it comes back in spaced review, and in the next missed session.
 */
async function rememberUnanswered(
  trx: Work,
  userId: string,
  session: SessionSummary,
  completedAt: Date,
): Promise<void> {
  const unanswered = await findUnanswered(trx, userId, session.id);
  const first = unanswered.flatMap(({ questionId, memory }) =>
    memory === undefined
      ? [{ questionId, memory: rememberAnswer(undefined, false, completedAt) }]
      : [],
  );
  await insertMemories(trx, userId, session.quizId, first);
  for (const { questionId, memory } of unanswered) {
    if (memory === undefined) continue;
    const key = { userId, quizId: session.quizId, questionId };
    await saveMemory(trx, key, memory, rememberAnswer(memory, false, completedAt));
  }
}

/**
 * A new answer needs a session in progress that has not expired (the stale
 * cleanup boundary). Called under the session's row lock.
 */
function refuseUnlessWritable(session: SessionSummary, now: Date): void {
  if (session.completedAt !== null) throw errors.sessionCompleted();
  if (isStale(session, now)) throw errors.sessionExpired();
}
