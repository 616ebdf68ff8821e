import type { Db } from "./database.js";

/**
 * A live quiz on a live study guide with its questions, in one statement:
 * one row per question (question columns null for a quiz without any), no
 * row when the quiz is missing, soft-deleted or under a soft-deleted study
 * guide. Rows come in no order: the caller sorts them (an ORDER BY over the
 * join costs MariaDB a temporary table per call). Correct answers are not
 * selected, so they cannot leak from here.
 */
export async function findLiveQuiz(db: Db, quizId: string) {
  return db
    .selectFrom("quizzes as z")
    .innerJoin("study_guides as g", "g.id", "z.study_guide_id")
    .leftJoin("questions as q", "q.quiz_id", "z.id")
    .select([
      "z.id",
      "z.study_guide_id",
      "z.title",
      "q.id as question_id",
      "q.position",
      "q.prompt",
    ])
    .where("z.id", "=", quizId)
    .where("z.deleted_at", "is", null)
    .where("g.deleted_at", "is", null)
    .execute();
}
