import type { Quiz, QuizQuestion } from "../domain/quiz.js";
import type { Db } from "./database.js";

/**
 * A live quiz on a live study guide with its questions, in one statement;
 * undefined when missing or soft-deleted. Questions come unsorted (an ORDER BY
 * over the join costs MariaDB a temporary table); correct answers are not
 * selected, so they cannot leak from here.
 */
export async function findLiveQuiz(db: Db, quizId: string): Promise<Quiz | undefined> {
  const rows = await db
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
  const first = rows[0];
  if (first === undefined) return undefined;
  // A quiz without questions is one row whose question columns are null.
  const questions = rows.flatMap((r): QuizQuestion[] =>
    r.question_id === null || r.position === null || r.prompt === null
      ? []
      : [{ id: r.question_id, position: r.position, prompt: r.prompt }],
  );
  return { id: first.id, studyGuideId: first.study_guide_id, title: first.title, questions };
}
