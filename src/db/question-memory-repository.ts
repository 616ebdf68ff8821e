import type { CompiledQuery, Transaction } from "kysely";
import type { QuestionMemory } from "../domain/memory.js";
import type { Database, Db } from "./database.js";
import { RowMoved } from "./errors.js";
import { liveQuiz } from "./session-columns.js";

/**
 * SQL of practice_question_memory, each learner's FSRS memory of each
 * question (src/domain/memory.ts): one statement per function.
 */

/** The memory columns of a row that LEFT JOINs practice_question_memory as `m`. */
export const joinedMemoryColumns = [
  "m.due_at as m_due_at",
  "m.last_answered_at as m_last_answered_at",
  "m.last_correct as m_last_correct",
  "m.reps as m_reps",
  "m.lapses as m_lapses",
  "m.state as m_state",
  "m.stability as m_stability",
  "m.difficulty as m_difficulty",
  "m.elapsed_days as m_elapsed_days",
  "m.scheduled_days as m_scheduled_days",
  "m.learning_steps as m_learning_steps",
] as const;

/** Nullable: a LEFT JOIN that found no memory. */
export interface JoinedMemoryColumns {
  m_due_at: Date | null;
  m_last_answered_at: Date | null;
  m_last_correct: number | null;
  m_reps: number | null;
  m_lapses: number | null;
  m_state: number | null;
  m_stability: number | null;
  m_difficulty: number | null;
  m_elapsed_days: number | null;
  m_scheduled_days: number | null;
  m_learning_steps: number | null;
}

/** The memory in a row of joinedMemoryColumns, or undefined when the join found none. */
export function toMemory(row: JoinedMemoryColumns): QuestionMemory | undefined {
  if (row.m_due_at === null || row.m_last_answered_at === null) return undefined;
  return {
    dueAt: row.m_due_at,
    lastAnsweredAt: row.m_last_answered_at,
    lastCorrect: row.m_last_correct === 1,
    reps: Number(row.m_reps),
    lapses: Number(row.m_lapses),
    state: Number(row.m_state),
    stability: Number(row.m_stability),
    difficulty: Number(row.m_difficulty),
    elapsedDays: Number(row.m_elapsed_days),
    scheduledDays: Number(row.m_scheduled_days),
    learningSteps: Number(row.m_learning_steps),
  };
}

/**
 * Thrown by saveMemory when the row changed since it was read (another
 * answer to the question committed meanwhile): the answer runs again.
 */
export class MemoryMoved extends RowMoved {
  constructor() {
    super("the question's memory changed since it was read");
  }
}

/**
 * Writes the learner's memory of a question after `previous` (as read in the
 * same transaction): an insert for the first answer, else an update of that
 * row only if it is still as read (its `reps`), or MemoryMoved. One statement
 * either way. A first insert that meets a row written meanwhile fails with a
 * duplicate key on the primary key (errors.ts, isLostRace): the caller runs the
 * answer again, as it does after MemoryMoved.
 */
export async function saveMemory(
  trx: Transaction<Database>,
  key: MemoryKey,
  previous: QuestionMemory | undefined,
  next: QuestionMemory,
): Promise<void> {
  const result = await trx.executeQuery(saveMemoryStatement(trx, key, previous, next));
  requireSaved(previous, Number(result.numAffectedRows ?? 0));
}

/** Whose memory of which question. */
export interface MemoryKey {
  userId: string;
  quizId: string;
  questionId: string;
}

/** A memory as its row's columns (all but the key). */
function memoryColumns(m: QuestionMemory) {
  return {
    due_at: m.dueAt,
    last_answered_at: m.lastAnsweredAt,
    last_correct: m.lastCorrect,
    reps: m.reps,
    lapses: m.lapses,
    state: m.state,
    stability: m.stability,
    difficulty: m.difficulty,
    elapsed_days: m.elapsedDays,
    scheduled_days: m.scheduledDays,
    learning_steps: m.learningSteps,
  };
}

/** saveMemory's statement, to run with others (answer-writes.ts): then `requireSaved`. */
export function saveMemoryStatement(
  trx: Transaction<Database>,
  key: MemoryKey,
  previous: QuestionMemory | undefined,
  m: QuestionMemory,
): CompiledQuery {
  const values = memoryColumns(m);
  if (previous !== undefined) {
    return trx
      .updateTable("practice_question_memory")
      .set(values)
      .where("user_id", "=", key.userId)
      .where("question_id", "=", key.questionId)
      .where("reps", "=", previous.reps)
      .compile();
  }
  return trx
    .insertInto("practice_question_memory")
    .values({ user_id: key.userId, question_id: key.questionId, quiz_id: key.quizId, ...values })
    .compile();
}

/** Rows a multi-row insert of memories holds at most (within every driver's parameter limit). */
const INSERT_CHUNK = 500;

/**
 * Inserts first memories of several questions of one quiz, in statements of
 * at most INSERT_CHUNK rows. A row written meanwhile fails the statement with
 * a duplicate key on the memory's primary key, as saveMemory's insert would.
 */
export async function insertMemories(
  trx: Transaction<Database>,
  userId: string,
  quizId: string,
  memories: readonly { questionId: string; memory: QuestionMemory }[],
): Promise<void> {
  for (let i = 0; i < memories.length; i += INSERT_CHUNK) {
    const rows = memories.slice(i, i + INSERT_CHUNK).map(({ questionId, memory: m }) => ({
      user_id: userId,
      question_id: questionId,
      quiz_id: quizId,
      ...memoryColumns(m),
    }));
    await trx.insertInto("practice_question_memory").values(rows).execute();
  }
}

/** MemoryMoved if an update after `previous` found its row changed (no row affected). */
export function requireSaved(previous: QuestionMemory | undefined, affectedRows: number): void {
  if (previous !== undefined && affectedRows === 0) throw new MemoryMoved();
}

/** The memory table's primary key (user_id, question_id), as duplicate-key errors name it. */

/** One row of the learner's memory of a quiz, as the due list shows it. */
export interface MemoryRow {
  questionId: string;
  dueAt: Date;
  lastAnsweredAt: Date;
  lastCorrect: boolean;
  reps: number;
  lapses: number;
}

/**
 * The live quiz's question ids in its order (position, then id: GetQuiz's
 * numbering), or undefined if the quiz is not live. Read from
 * questions_by_quiz and sorted here: an ORDER BY over the join would make
 * MariaDB build a temporary table.
 */
export async function findQuizQuestionIds(db: Db, quizId: string): Promise<string[] | undefined> {
  const rows = await db
    .selectFrom(liveQuiz(db, quizId).as("live"))
    .leftJoin("questions as q", (join) => join.on("q.quiz_id", "=", quizId))
    .select(["q.id", "q.position"])
    .execute();
  if (rows.length === 0) return undefined;
  return rows
    .flatMap((r) =>
      r.id === null || r.position === null ? [] : [{ id: String(r.id), position: r.position }],
    )
    .sort((a, b) => a.position - b.position || a.id.length - b.id.length || (a.id < b.id ? -1 : 1))
    .map((r) => r.id);
}

/**
 * How many of a quiz's questions the learner remembers, and how many of
 * those are due at `now`: one pass over memory_by_due's (user_id, quiz_id)
 * range. Memory of a deleted question is gone with it (ON DELETE CASCADE).
 */
export async function countMemory(
  db: Db,
  userId: string,
  quizId: string,
  now: Date,
): Promise<{ remembered: number; due: number }> {
  const row = await db
    .selectFrom("practice_question_memory")
    .select((eb) => [
      eb.fn.countAll<number | string>().as("remembered"),
      eb.fn
        .sum<number | string | null>(eb.case().when("due_at", "<=", now).then(1).else(0).end())
        .as("due"),
    ])
    .where("user_id", "=", userId)
    .where("quiz_id", "=", quizId)
    .executeTakeFirst();
  return { remembered: Number(row?.remembered ?? 0), due: Number(row?.due ?? 0) };
}

/**
 * Up to `take` of the learner's memory rows of a quiz due at or before `now`
 * and after `afterDueAt`, in the order (due_at, question_id): one range of
 * memory_by_due (user_id, quiz_id, due_at, and the primary key's question_id
 * after it), read from `afterDueAt` on, whatever the number due.
 */
export async function findDueMemory(
  db: Db,
  userId: string,
  quizId: string,
  now: Date,
  page: { take: number; afterDueAt: Date | undefined },
): Promise<MemoryRow[]> {
  return toMemoryRows(await dueMemoryQuery(db, userId, quizId, now, page).execute());
}

/** The statement of findDueMemory (bench/rows-read.ts and the due-page test EXPLAIN it). */
export function dueMemoryQuery(
  db: Db,
  userId: string,
  quizId: string,
  now: Date,
  page: { take: number; afterDueAt: Date | undefined },
) {
  let query = memoryOfQuiz(db, userId, quizId).where("due_at", "<=", now);
  if (page.afterDueAt !== undefined) query = query.where("due_at", ">", page.afterDueAt);
  return query.orderBy("due_at").orderBy("question_id").limit(page.take);
}

/**
 * The learner's memory rows of a quiz due exactly at `dueAt` (questions
 * missed together share it): one point of memory_by_due, as many rows as
 * questions of the quiz at most.
 */
export async function findMemoryDueAt(
  db: Db,
  userId: string,
  quizId: string,
  dueAt: Date,
): Promise<MemoryRow[]> {
  return toMemoryRows(await memoryOfQuiz(db, userId, quizId).where("due_at", "=", dueAt).execute());
}

/** The columns of a due row, of the learner's memory of one quiz. */
function memoryOfQuiz(db: Db, userId: string, quizId: string) {
  return db
    .selectFrom("practice_question_memory")
    .select(["question_id", "due_at", "last_answered_at", "last_correct", "reps", "lapses"])
    .where("user_id", "=", userId)
    .where("quiz_id", "=", quizId);
}

function toMemoryRows(
  rows: {
    question_id: number | string;
    due_at: Date;
    last_answered_at: Date;
    last_correct: number;
    reps: number;
    lapses: number;
  }[],
): MemoryRow[] {
  return rows.map((r) => ({
    questionId: String(r.question_id),
    dueAt: r.due_at,
    lastAnsweredAt: r.last_answered_at,
    lastCorrect: r.last_correct === 1,
    reps: r.reps,
    lapses: r.lapses,
  }));
}

/** The earliest due time after `now` of the learner's memory of a quiz (the same index), or null. */
export async function findNextDueAt(
  db: Db,
  userId: string,
  quizId: string,
  now: Date,
): Promise<Date | null> {
  const row = await nextDueQuery(db, userId, quizId, now).executeTakeFirst();
  return row?.due_at ?? null;
}

/** The statement of findNextDueAt (bench/rows-read.ts EXPLAINs it). */
export function nextDueQuery(db: Db, userId: string, quizId: string, now: Date) {
  return db
    .selectFrom("practice_question_memory")
    .select("due_at")
    .where("user_id", "=", userId)
    .where("quiz_id", "=", quizId)
    .where("due_at", ">", now)
    .orderBy("due_at")
    .limit(1);
}
