import { sql, type Transaction } from "kysely";
import type { Database, Db } from "./database.js";
import { snapshotAnswers } from "./snapshot-answers.js";

/**
 * SQL of starting a session: clearing a stale one, inserting a new one with its snapshot of the
 * quiz (whole, given questions, or those missed last time). The unique key lets one of racing
 * starts insert; the others fail with a duplicate key (errors.ts, isLostRace).
 */

/** A new session as the use case names it. */
export interface NewSession {
  id: string;
  userId: string;
  quizId: string;
  startedAt: Date;
}

/**
 * Hard-deletes an in-progress session that started before `cutoff`; its
 * snapshot and answers go with it (ON DELETE CASCADE). Re-checks both
 * conditions, so a session completed meanwhile is kept. Returns rows deleted.
 */
export async function deleteStaleSession(db: Db, id: string, cutoff: Date): Promise<number> {
  const result = await db
    .deleteFrom("practice_sessions")
    .where("id", "=", id)
    .where("completed_at", "is", null)
    .where("started_at", "<", cutoff)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/**
 * Inserts a session with total_questions counted in the same statement;
 * nothing when the quiz has no questions. Returns rows inserted (0 or 1).
 * Throws a duplicate key on ONE_ACTIVE_SESSION_KEY if one is in progress.
 */
export async function insertSessionCountingQuestions(
  trx: Transaction<Database>,
  session: NewSession,
): Promise<number> {
  const result = await trx
    .insertInto("practice_sessions")
    .columns(["id", "user_id", "quiz_id", "started_at", "total_questions"])
    .expression((eb) =>
      eb
        .selectFrom("questions")
        .select([
          eb.val(session.id).as("id"),
          eb.val(session.userId).as("user_id"),
          eb.val(session.quizId).as("quiz_id"),
          eb.val(session.startedAt).as("started_at"),
          eb.fn.countAll<number>().as("total_questions"),
        ])
        .where("quiz_id", "=", session.quizId)
        .having(eb.fn.countAll(), ">", 0),
    )
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0n);
}

/**
 * Freezes the quiz's questions into the session's snapshot, numbered 1..n.
 * Run in the transaction of `insertSessionCountingQuestions`: under REPEATABLE
 * READ both INSERT ... SELECTs lock the same questions, so the count matches.
 */
export async function insertSnapshot(
  trx: Transaction<Database>,
  sessionId: string,
  quizId: string,
): Promise<number> {
  const result = await trx
    .insertInto("practice_session_questions")
    .columns(["session_id", "position", "question_id"])
    .expression((eb) =>
      eb
        .selectFrom("questions")
        .select([
          eb.val(sessionId).as("session_id"),
          sql<number>`ROW_NUMBER() OVER (ORDER BY questions.position, questions.id)`.as("position"),
          "id as question_id",
        ])
        .where("quiz_id", "=", quizId),
    )
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0n);
}

/**
 * Inserts a review or missed session and its snapshot: `questionIds` numbered
 * 1..n in the order given. Throws a duplicate key on ONE_ACTIVE_SESSION_KEY if
 * one is in progress, and a foreign-key violation if a question is gone meanwhile.
 */
export async function insertSessionOfQuestions(
  trx: Transaction<Database>,
  session: NewSession,
  mode: "review" | "missed",
  questionIds: readonly string[],
): Promise<void> {
  await trx
    .insertInto("practice_sessions")
    .values({
      id: session.id,
      user_id: session.userId,
      quiz_id: session.quizId,
      started_at: session.startedAt,
      total_questions: questionIds.length,
      mode,
    })
    .execute();
  await trx
    .insertInto("practice_session_questions")
    .values(
      questionIds.map((questionId, i) => ({
        session_id: session.id,
        position: i + 1,
        question_id: questionId,
      })),
    )
    .execute();
}

/**
 * The questions the user did not answer correctly (wrong, or not at all) in
 * their latest completed session of the quiz, that still exist, in the quiz's
 * order (position, then id); undefined without a completed session. The
 * latest is the last started: sessions_by_start read backwards, one row.
 */
export async function findMissedQuestions(
  db: Db,
  userId: string,
  quizId: string,
): Promise<string[] | undefined> {
  const latest = await db
    .selectFrom("practice_sessions")
    .select("id")
    .where("user_id", "=", userId)
    .where("quiz_id", "=", quizId)
    .where("completed_at", "is not", null)
    .orderBy("started_at", "desc")
    .orderBy("id", "desc")
    .limit(1)
    .executeTakeFirst();
  if (latest === undefined) return undefined;
  const rows = await snapshotAnswers(db, latest.id)
    .select(["q.id", "q.position", "a.is_correct"])
    .where("q.quiz_id", "=", quizId)
    .execute();
  // Sorted here: an ORDER BY over the join would make MariaDB build a temporary table.
  return rows
    .filter((r) => r.is_correct === null || Number(r.is_correct) === 0)
    .map((r) => ({ id: String(r.id), position: r.position }))
    .sort((a, b) => a.position - b.position || a.id.length - b.id.length || (a.id < b.id ? -1 : 1))
    .map((r) => r.id);
}
