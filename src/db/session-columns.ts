import { sql } from "kysely";
import type { Db } from "./database.js";

/** Pieces of SQL the practice sessions statements share (practice-sessions-repository.ts, session-page.ts). */

/** Sub-query that yields one row iff the quiz is live on a live study guide. */
export function liveQuiz(db: Db, quizId: string) {
  return db
    .selectFrom("quizzes as q")
    .innerJoin("study_guides as g", "g.id", "q.study_guide_id")
    .select(sql<number>`1`.as("live"))
    .where("q.id", "=", quizId)
    .where("q.deleted_at", "is", null)
    .where("g.deleted_at", "is", null);
}

export const summaryColumns = [
  "id",
  "quiz_id",
  "started_at",
  "completed_at",
  "total_questions",
  "correct_answers",
  "answered_questions",
  "mode",
] as const;
