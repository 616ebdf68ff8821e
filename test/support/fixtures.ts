import { sql } from "kysely";
import type { Db } from "../../src/db/database.js";

export interface QuizFixture {
  studyGuideId: string;
  quizId: string;
  questionIds: string[];
}

export interface QuizOptions {
  questions?: number;
  quizDeleted?: boolean;
  studyGuideDeleted?: boolean;
  createdBy?: string;
}

/** Inserts a study guide with one quiz of `questions` questions (default 3). */
export async function insertQuiz(db: Db, options: QuizOptions = {}): Promise<QuizFixture> {
  const deletedAt = new Date("2026-01-01T00:00:00Z");
  const guide = await db
    .insertInto("study_guides")
    .values({ title: "Guide", deleted_at: options.studyGuideDeleted ? deletedAt : null })
    .executeTakeFirstOrThrow();
  const studyGuideId = String(guide.insertId);
  const quiz = await db
    .insertInto("quizzes")
    .values({
      study_guide_id: studyGuideId,
      title: "Quiz",
      created_by: options.createdBy ?? null,
      deleted_at: options.quizDeleted ? deletedAt : null,
    })
    .executeTakeFirstOrThrow();
  const quizId = String(quiz.insertId);
  const questionIds: string[] = [];
  for (let i = 0; i < (options.questions ?? 3); i++) {
    questionIds.push(await insertQuestion(db, quizId, i + 1));
  }
  return { studyGuideId, quizId, questionIds };
}

/**
 * The quiz with the largest answer the service gives: GetQuiz of 100
 * questions of 2,800 characters, about 282 KB.
 */
export async function insertLargestQuiz(db: Db): Promise<QuizFixture> {
  const quiz = await insertQuiz(db, { questions: 100 });
  await db
    .updateTable("questions")
    .set({ prompt: "p".repeat(2800) })
    .where("quiz_id", "=", quiz.quizId)
    .execute();
  return quiz;
}

export async function insertQuestion(db: Db, quizId: string, position: number): Promise<string> {
  const row = await db
    .insertInto("questions")
    .values({ quiz_id: quizId, position, prompt: `Q${position}?`, correct_answer: `A${position}` })
    .executeTakeFirstOrThrow();
  return String(row.insertId);
}

export interface SessionRow {
  id: string;
  userId: string;
  quizId: string;
  startedAt: Date;
  completedAt?: Date | null;
  totalQuestions?: number;
  correctAnswers?: number;
}

/** A UUIDv7-shaped session id whose order follows `n`: ids a test can sort. */
export const sessionIdFor = (n: number): string =>
  `019a0000-0000-7000-8000-${n.toString(16).padStart(12, "0")}`;

/** The order the spec lists sessions in: started_at descending, then id descending. */
export const newestFirst = (a: SessionRow, b: SessionRow): number =>
  b.startedAt.getTime() - a.startedAt.getTime() || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);

/** Inserts sessions directly, bypassing the service (history fixtures). */
export async function insertSessions(db: Db, rows: SessionRow[]): Promise<void> {
  for (let i = 0; i < rows.length; i += 500) {
    await db
      .insertInto("practice_sessions")
      .values(
        rows.slice(i, i + 500).map((r) => ({
          id: r.id,
          user_id: r.userId,
          quiz_id: r.quizId,
          started_at: r.startedAt,
          completed_at: r.completedAt ?? null,
          total_questions: r.totalQuestions ?? 3,
          correct_answers: r.correctAnswers ?? 0,
        })),
      )
      .execute();
  }
}

/** Inserts an answer row directly, bypassing SubmitAnswer's rules. */
export async function insertAnswer(
  db: Db,
  answer: {
    sessionId: string;
    questionId: string;
    userAnswer: string;
    isCorrect: boolean;
    answeredAt: Date;
  },
): Promise<void> {
  await db
    .insertInto("practice_session_answers")
    .values({
      session_id: answer.sessionId,
      question_id: answer.questionId,
      user_answer: answer.userAnswer,
      is_correct: answer.isCorrect,
      answered_at: answer.answeredAt,
    })
    .execute();
}

/** Rows of a table, for "nothing half-written" checks. */
export async function countRows(
  db: Db,
  table:
    | "practice_sessions"
    | "practice_session_questions"
    | "practice_session_answers"
    | "practice_outbox",
): Promise<number> {
  const { rows } = await sql<{ n: number }>`SELECT COUNT(*) AS n FROM ${sql.table(table)}`.execute(
    db,
  );
  return Number(rows[0]?.n ?? 0);
}

/** A session's snapshot rows as stored, by position. */
export async function snapshotOf(db: Db, sessionId: string) {
  return db
    .selectFrom("practice_session_questions")
    .select(["position", "question_id"])
    .where("session_id", "=", sessionId)
    .orderBy("position")
    .execute();
}
