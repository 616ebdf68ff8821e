import type { CompiledQuery, Transaction } from "kysely";
import type { QuestionMemory } from "../domain/memory.js";
import type { Answer, Session, SessionSummary, SnapshotQuestion } from "../domain/session.js";
import type { Database, Db, NewAnswer } from "./database.js";
import { toSession, toStoredAnswer, toSummary } from "./decode.js";
import { RowMoved } from "./errors.js";
import { joinedMemoryColumns, toMemory } from "./question-memory-repository.js";
import { liveQuiz, summaryColumns, summaryColumnsOfS } from "./session-columns.js";
import { snapshotAnswers } from "./snapshot-answers.js";

/**
 * SQL of the practice sessions: one statement per function, decoded to domain
 * values here; the layer above opens transactions.
 */

/** The unique key that allows one in-progress session per user and quiz. */

const sessionColumns = summaryColumnsOfS;

/** Columns of one answer, of `practice_session_answers as a` (null when it has none). */
const answerColumns = [
  "a.id as answer_id",
  "a.question_id",
  "a.user_answer",
  "a.is_correct",
  "a.answered_at",
] as const;

/** Columns of a session and of one of its answers (null when it has none). */
const sessionWithAnswerColumns = [...sessionColumns, ...answerColumns];

/**
 * The state a start needs, in one statement: undefined if the quiz is not
 * live, else the user's in-progress session on it (if any) with its answers.
 * Answers come unsorted: an ORDER BY over the join makes MariaDB build a
 * temporary table on every call.
 */
export async function findStartState(
  db: Db,
  userId: string,
  quizId: string,
): Promise<{ inProgress: Session | undefined } | undefined> {
  const rows = await db
    .selectFrom(liveQuiz(db, quizId).as("live"))
    .leftJoin("practice_sessions as s", (join) =>
      join.on("s.user_id", "=", userId).on("s.quiz_id", "=", quizId).on("s.active", "=", 1),
    )
    .leftJoin("practice_session_answers as a", "a.session_id", "s.id")
    .select(sessionWithAnswerColumns)
    .execute();
  return rows.length === 0 ? undefined : { inProgress: toSession(rows) };
}

/**
 * A user's session and its answers (sorted by the caller), in one statement;
 * undefined if it does not exist or is another user's.
 */
export async function findSessionWithAnswers(
  db: Db,
  userId: string,
  sessionId: string,
): Promise<Session | undefined> {
  const rows = await db
    .selectFrom("practice_sessions as s")
    .leftJoin("practice_session_answers as a", "a.session_id", "s.id")
    .select(sessionWithAnswerColumns)
    .where("s.id", "=", sessionId)
    .where("s.user_id", "=", userId)
    .execute();
  return toSession(rows);
}

/**
 * A session's snapshot, by position, with each question's current correct
 * answer (null for a deleted question): the caller decides whether to show it.
 */
export async function findSnapshot(db: Db, sessionId: string): Promise<SnapshotQuestion[]> {
  const rows = await db
    .selectFrom("practice_session_questions as sq")
    .leftJoin("questions as q", "q.id", "sq.question_id")
    .select(["sq.position", "sq.question_id", "q.correct_answer"])
    .where("sq.session_id", "=", sessionId)
    .orderBy("sq.position")
    .execute();
  return rows.map((r) => ({
    position: r.position,
    questionId: r.question_id,
    correctAnswer: r.correct_answer,
  }));
}

/**
 * Reads a user's session and locks its row until the transaction ends, so
 * answers and completion of one session run one after the other. Undefined
 * if the session does not exist or is another user's.
 */
export async function lockSession(
  trx: Transaction<Database>,
  userId: string,
  sessionId: string,
): Promise<SessionSummary | undefined> {
  const row = await trx
    .selectFrom("practice_sessions")
    .select(summaryColumns)
    .where("id", "=", sessionId)
    .where("user_id", "=", userId)
    .forUpdate()
    .executeTakeFirst();
  return row && toSummary(row);
}

/** A snapshot question's correct answer and the session's answer to it (null without one). */
const snapshotAnswerColumns = ["q.correct_answer", ...answerColumns] as const;

/**
 * A snapshot question that still exists, with the session's stored answer
 * to it, if any. A plain read: locking the question row would serialize
 * every user answering it; the caller holds the session's lock.
 */
function snapshotQuestion(db: Db, sessionId: string, questionId: string) {
  return snapshotAnswers(db, sessionId)
    .select(snapshotAnswerColumns)
    .where("sq.question_id", "=", questionId);
}

/** A snapshot question's correct answer and the session's stored answer to it (see above). */
export async function findSnapshotQuestion(
  db: Db,
  sessionId: string,
  questionId: string,
): Promise<{ correctAnswer: string; answer: Answer | undefined } | undefined> {
  const row = await snapshotQuestion(db, sessionId, questionId).executeTakeFirst();
  return row && { correctAnswer: row.correct_answer, answer: toStoredAnswer(row) };
}

/**
 * findSnapshotQuestion, and in the same statement the user's memory of the
 * question (a primary-key lookup): what an answer needs, in one round trip.
 */
export async function findAnswerContext(
  db: Db,
  userId: string,
  sessionId: string,
  questionId: string,
): Promise<AnswerContext | undefined> {
  const row = await snapshotQuestion(db, sessionId, questionId)
    .leftJoin("practice_question_memory as m", (join) =>
      join.on("m.user_id", "=", userId).onRef("m.question_id", "=", "sq.question_id"),
    )
    .select(joinedMemoryColumns)
    .executeTakeFirst();
  return row && toAnswerContext(row);
}

/** What an answer to one snapshot question needs to know. */
export interface AnswerContext {
  correctAnswer: string;
  /** The session's stored answer to it. */
  answer: Answer | undefined;
  /** The user's memory of it. */
  memory: QuestionMemory | undefined;
}

function toAnswerContext(
  row: Parameters<typeof toStoredAnswer>[0] &
    Parameters<typeof toMemory>[0] & { correct_answer: string },
): AnswerContext {
  return { correctAnswer: row.correct_answer, answer: toStoredAnswer(row), memory: toMemory(row) };
}

/**
 * The user's session with findAnswerContext's answer, in one plain read (no
 * locks): undefined without the session, `question` undefined when the
 * question is not in its snapshot (or was deleted). countAnswerIfUnchanged
 * then checks, under the row's lock, that the session did not move since.
 */
export async function findSessionForAnswer(
  db: Db,
  userId: string,
  sessionId: string,
  questionId: string,
): Promise<{ session: SessionSummary; question: AnswerContext | undefined } | undefined> {
  const row = await db
    .selectFrom("practice_sessions as s")
    .leftJoin("practice_session_questions as sq", (join) =>
      join.onRef("sq.session_id", "=", "s.id").on("sq.question_id", "=", questionId),
    )
    .leftJoin("questions as q", "q.id", "sq.question_id")
    .leftJoin("practice_session_answers as a", (join) =>
      join
        .onRef("a.session_id", "=", "sq.session_id")
        .onRef("a.question_id", "=", "sq.question_id"),
    )
    .leftJoin("practice_question_memory as m", (join) =>
      join.on("m.user_id", "=", userId).onRef("m.question_id", "=", "q.id"),
    )
    .select(sessionColumns)
    .select(snapshotAnswerColumns)
    .select(joinedMemoryColumns)
    .where("s.id", "=", sessionId)
    .where("s.user_id", "=", userId)
    .executeTakeFirst();
  const session = row && toSummary(row);
  if (row === undefined || session === undefined) return undefined;
  const { correct_answer } = row;
  const question =
    correct_answer === null ? undefined : toAnswerContext({ ...row, correct_answer });
  return { session, question };
}

/** The unique key that allows one answer per question and session. */

/**
 * Inserts an answer. Throws a duplicate-key error on
 * ONE_ANSWER_PER_QUESTION_KEY when the question is answered already.
 */
export async function insertAnswer(trx: Transaction<Database>, answer: NewAnswer): Promise<void> {
  await trx.executeQuery(insertAnswerStatement(trx, answer));
}

/** insertAnswer's statement, to run with others (answer-writes.ts). */
export function insertAnswerStatement(
  trx: Transaction<Database>,
  answer: NewAnswer,
): CompiledQuery {
  return trx.insertInto("practice_session_answers").values(answer).compile();
}

/**
 * Counts an answer in its session's row. Unconditional on purpose: two answers
 * to one session then conflict on that row, also under Galera's certification.
 */
export async function countAnswer(
  trx: Transaction<Database>,
  sessionId: string,
  correct: boolean,
): Promise<void> {
  await trx
    .updateTable("practice_sessions")
    .set((eb) => ({
      answered_questions: eb("answered_questions", "+", 1),
      correct_answers: eb("correct_answers", "+", correct ? 1 : 0),
    }))
    .where("id", "=", sessionId)
    .execute();
}

/**
 * countAnswer, only if the session is still in progress with the count it
 * was read with (findSessionForAnswer): the update takes the row's lock as
 * lockSession would. RowMoved when it moved meanwhile (another answer, or
 * its completion), and nothing was written.
 */
export async function countAnswerIfUnchanged(
  trx: Transaction<Database>,
  session: SessionSummary,
  correct: boolean,
): Promise<void> {
  const result = await trx
    .updateTable("practice_sessions")
    .set((eb) => ({
      answered_questions: eb("answered_questions", "+", 1),
      correct_answers: eb("correct_answers", "+", correct ? 1 : 0),
    }))
    .where("id", "=", session.id)
    .where("answered_questions", "=", session.answeredQuestions)
    .where("completed_at", "is", null)
    .executeTakeFirst();
  if (Number(result.numUpdatedRows) === 0) {
    throw new RowMoved("the session changed since it was read");
  }
}

/** When the session's latest answer was recorded, or undefined without answers. */
export async function findLatestAnswerAt(db: Db, sessionId: string): Promise<Date | undefined> {
  const row = await db
    .selectFrom("practice_session_answers")
    .select("answered_at")
    .where("session_id", "=", sessionId)
    .orderBy("answered_at", "desc")
    .limit(1)
    .executeTakeFirst();
  return row?.answered_at;
}

/** Sets completed_at of an in-progress session; returns rows changed (0 or 1). */
export async function markCompleted(
  trx: Transaction<Database>,
  sessionId: string,
  at: Date,
): Promise<number> {
  const result = await trx
    .updateTable("practice_sessions")
    .set({ completed_at: at })
    .where("id", "=", sessionId)
    .where("completed_at", "is", null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/**
 * The session's snapshot questions that still exist and hold no answer, with
 * the user's memory of each (null columns without one): what a completion
 * records as missed.
 */
export async function findUnanswered(
  db: Db,
  userId: string,
  sessionId: string,
): Promise<{ questionId: string; memory: QuestionMemory | undefined }[]> {
  const rows = await snapshotAnswers(db, sessionId)
    .leftJoin("practice_question_memory as m", (join) =>
      join.on("m.user_id", "=", userId).onRef("m.question_id", "=", "q.id"),
    )
    .select("q.id")
    .select(joinedMemoryColumns)
    .where("a.id", "is", null)
    .execute();
  return rows.map((r) => ({ questionId: String(r.id), memory: toMemory(r) }));
}
