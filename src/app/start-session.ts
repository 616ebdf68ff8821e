import type { Db } from "../db/database.js";
import { isLostRace } from "../db/errors.js";
import { recordEvents } from "../db/outbox-event.js";
import { findSnapshot, findStartState } from "../db/practice-sessions-repository.js";
import {
  deleteStaleSession,
  findMissedQuestions,
  insertSessionCountingQuestions,
  insertSessionOfQuestions,
  insertSnapshot,
} from "../db/session-start-repository.js";
import { inTransaction } from "../db/unit-of-work.js";
import { sessionExpired, sessionStarted } from "../domain/events.js";
import { MAX_REVIEW_QUESTIONS } from "../domain/memory.js";
import {
  isDatabaseId,
  isStale,
  type Session,
  type SessionMode,
  type SessionProgress,
  type SnapshotQuestion,
  staleCutoff,
  toSnapshot,
  withProgress,
} from "../domain/session.js";
import { errors } from "./errors.js";
import { findDueQuestions } from "./review.js";
import { retrying } from "./service-errors.js";
import type { SessionsContext } from "./sessions-context.js";

export interface StartResult {
  session: Session & SessionProgress;
  /** True if this call created the session, false if it resumed one. */
  created: boolean;
  /** The snapshot, by position: the questions to answer (no correct answers). */
  questions: SnapshotQuestion[];
}

/**
 * Starts a session on a live quiz, or resumes the user's in-progress one (of
 * any mode). A stale in-progress session (started over 7 days ago) is
 * deleted first, and a fresh one created: of the whole quiz; in mode
 * "review" of the questions due now (at most MAX_REVIEW_QUESTIONS, earliest
 * due first); in mode "missed" of the questions not answered correctly in
 * the latest completed session. When starts race, the unique key lets one
 * insert; the others read the winner's session and resume it.
 */
export async function startSession(
  ctx: SessionsContext,
  userId: string,
  quizId: string,
  mode: SessionMode = "full",
): Promise<StartResult> {
  if (!isDatabaseId(quizId)) throw errors.quizNotFound();
  return retrying(
    () => startOnce(ctx, userId, quizId, mode),
    ctx.retry,
    // Another start won, or a snapshot's question was deleted between its read
    // and the insert: the next attempt resumes the winner or reads without it.
    isLostRace,
  );
}

async function startOnce(
  ctx: SessionsContext,
  userId: string,
  quizId: string,
  mode: SessionMode,
): Promise<StartResult> {
  const { db, clock } = ctx;
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
    await inTransaction(db, async (trx) => {
      const deleted = await deleteStaleSession(trx, existing.id, staleCutoff(now));
      if (deleted > 0) {
        await recordEvents(trx, [sessionExpired(userId, existing, now)]);
      }
    });
  }

  if (mode !== "full") return startOfQuestions(ctx, userId, quizId, mode, now);
  const id = ctx.newSessionId();
  const snapshot = await inTransaction(db, async (trx) => {
    const inserted = await insertSessionCountingQuestions(trx, {
      id,
      userId,
      quizId,
      startedAt: now,
    });
    if (inserted === 0) return [];
    await insertSnapshot(trx, id, quizId);
    const snapshot = await findSnapshot(trx, id);
    const started = { id, quizId, startedAt: now, totalQuestions: snapshot.length, mode };
    await recordEvents(trx, [sessionStarted(userId, started)]);
    return snapshot;
  });
  if (snapshot.length === 0) throw errors.quizHasNoQuestions();
  return created(id, quizId, now, "full", snapshot);
}

/**
 * Creates a review or missed session, its snapshot read in the insert's
 * transaction: for review, what is due at `now` (nothing due is
 * `failed_precondition` with the next due time); for missed, the questions
 * not answered correctly in the latest completed session, in quiz order
 * (none is `failed_precondition`).
 */
async function startOfQuestions(
  { db, newSessionId }: SessionsContext,
  userId: string,
  quizId: string,
  mode: "review" | "missed",
  now: Date,
): Promise<StartResult> {
  const id = newSessionId();
  const snapshot = await inTransaction(db, async (trx) => {
    const picked =
      mode === "review"
        ? await pickDue(trx, userId, quizId, now)
        : await pickMissed(trx, userId, quizId);
    await insertSessionOfQuestions(trx, { id, userId, quizId, startedAt: now }, mode, picked);
    const snapshot = await findSnapshot(trx, id);
    const started = { id, quizId, startedAt: now, totalQuestions: snapshot.length, mode };
    await recordEvents(trx, [sessionStarted(userId, started)]);
    return snapshot;
  });
  return created(id, quizId, now, mode, snapshot);
}

/** A missed session's snapshot, or failed_precondition when nothing was missed. */
async function pickMissed(db: Db, userId: string, quizId: string): Promise<string[]> {
  const picked = await findMissedQuestions(db, userId, quizId);
  if (picked === undefined) throw errors.nothingMissed("you have not completed this quiz yet");
  if (picked.length === 0)
    throw errors.nothingMissed(
      "no question was missed in your latest completed session of this quiz",
    );
  return picked;
}

/** A review's snapshot: the first MAX_REVIEW_QUESTIONS due, or NothingDue. */
async function pickDue(db: Db, userId: string, quizId: string, now: Date): Promise<string[]> {
  const due = await findDueQuestions(db, userId, quizId, now, MAX_REVIEW_QUESTIONS);
  if (due === undefined) throw errors.quizNotFound();
  const picked = due.questions.map((q) => q.questionId);
  if (picked.length === 0) throw errors.nothingDue(due.nextDueAt);
  return picked;
}

/** What a start that created session `id` answers: no answers yet, its snapshot without correct answers. */
function created(
  id: string,
  quizId: string,
  startedAt: Date,
  mode: SessionMode,
  snapshot: Parameters<typeof toSnapshot>[0],
): StartResult {
  const session = {
    id,
    quizId,
    startedAt,
    completedAt: null,
    totalQuestions: snapshot.length,
    correctAnswers: 0,
    answeredQuestions: 0,
    mode,
    answers: [],
  };
  return { created: true, session: withProgress(session), questions: toSnapshot(snapshot, false) };
}
