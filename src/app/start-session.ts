import { isDuplicateKey } from "../db/errors.js";
import { insertEvents } from "../db/outbox-repository.js";
import {
  deleteStaleSession,
  findSnapshot,
  findStartState,
  insertSessionCountingQuestions,
  insertSnapshot,
  ONE_ACTIVE_SESSION_KEY,
} from "../db/practice-sessions-repository.js";
import { sessionExpired, sessionStarted } from "../domain/events.js";
import {
  isDatabaseId,
  isStale,
  type Session,
  type SessionProgress,
  type SnapshotQuestion,
  staleCutoff,
  toSnapshot,
  withProgress,
} from "../domain/session.js";
import { outboxEvent } from "../events/cloud-event.js";
import { errors } from "./errors.js";
import { retrying } from "./service-errors.js";
import type { SessionsContext } from "./sessions-context.js";
import { requireWellFormed } from "./well-formed.js";

export interface StartResult {
  session: Session & SessionProgress;
  /** True if this call created the session, false if it resumed one. */
  created: boolean;
  /** The snapshot, by position: the questions to answer (no correct answers). */
  questions: SnapshotQuestion[];
}

/**
 * Starts a session on a live quiz, or resumes the user's in-progress one.
 * A stale in-progress session (started over 7 days ago) is deleted first,
 * and a fresh one created. When starts race, the unique key lets one
 * insert; the others read the winner's session and resume it.
 */
export async function startSession(
  ctx: SessionsContext,
  userId: string,
  quizId: string,
): Promise<StartResult> {
  requireWellFormed({ quiz_id: quizId });
  if (!isDatabaseId(quizId)) throw errors.quizNotFound();
  return retrying(
    () => startOnce(ctx, userId, quizId),
    ctx.retry,
    (err) => isDuplicateKey(err, ONE_ACTIVE_SESSION_KEY),
  );
}

async function startOnce(
  { db, clock, newSessionId }: SessionsContext,
  userId: string,
  quizId: string,
): Promise<StartResult> {
  const now = clock.now();
  const state = await findStartState(db, userId, quizId);
  if (state === undefined) throw errors.quizNotFound();
  const existing = state.inProgress;
  if (existing !== undefined) {
    if (!isStale(existing, now)) {
      const snapshot = await findSnapshot(db, existing.id);
      const questions = toSnapshot(snapshot, false);
      return { session: withProgress(existing), created: false, questions };
    }
    // The delete and its event commit together (or neither does).
    await db.transaction().execute(async (trx) => {
      const deleted = await deleteStaleSession(trx, existing.id, staleCutoff(now));
      if (deleted > 0) {
        await insertEvents(trx, [outboxEvent(sessionExpired(userId, existing, now))]);
      }
    });
  }

  const id = newSessionId();
  const snapshot = await db.transaction().execute(async (trx) => {
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
    await insertEvents(trx, [outboxEvent(sessionStarted(userId, started))]);
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
