import { sql } from "kysely";
import type { Db } from "./database.js";

/** A live quiz as a list shows it, with the caller's counts. */
export interface QuizListRow {
  id: string;
  studyGuideId: string;
  title: string;
  questionCount: number;
  inProgressSessions: number;
  /** `userId`'s questions of the quiz due for review at `now`. */
  dueCount: number;
}

/**
 * Up to `limit` live quizzes with ids above `after`, by id, each with its question
 * count, `userId`'s unexpired sessions in progress and questions due at `now`
 * (correlated counts on indexes).
 */
export async function listLiveQuizzes(
  db: Db,
  query: {
    userId: string;
    staleCutoff: Date;
    now: Date;
    after: string | undefined;
    limit: number;
  },
): Promise<QuizListRow[]> {
  let select = db
    .selectFrom("quizzes as z")
    .innerJoin("study_guides as g", "g.id", "z.study_guide_id")
    .select((eb) => [
      "z.id",
      "z.study_guide_id",
      "z.title",
      eb
        .selectFrom("questions as q")
        .select(sql<number>`count(*)`.as("n"))
        .whereRef("q.quiz_id", "=", "z.id")
        .as("question_count"),
      eb
        .selectFrom("practice_sessions as s")
        .select(sql<number>`count(*)`.as("n"))
        .whereRef("s.quiz_id", "=", "z.id")
        .where("s.user_id", "=", query.userId)
        .where("s.completed_at", "is", null)
        .where("s.started_at", ">=", query.staleCutoff)
        .as("in_progress"),
      eb
        .selectFrom("practice_question_memory as m")
        .select(sql<number>`count(*)`.as("n"))
        .where("m.user_id", "=", query.userId)
        .whereRef("m.quiz_id", "=", "z.id")
        .where("m.due_at", "<=", query.now)
        .as("due"),
    ])
    .where("z.deleted_at", "is", null)
    .where("g.deleted_at", "is", null);
  if (query.after !== undefined) select = select.where("z.id", ">", query.after);
  const rows = await select.orderBy("z.id").limit(query.limit).execute();
  return rows.map((r) => ({
    id: String(r.id),
    studyGuideId: String(r.study_guide_id),
    title: r.title,
    questionCount: Number(r.question_count ?? 0),
    inProgressSessions: Number(r.in_progress ?? 0),
    dueCount: Number(r.due ?? 0),
  }));
}
