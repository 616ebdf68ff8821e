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

/** A session's columns a summary reads as they are. */
export const plainSummaryColumns = [
  "id",
  "quiz_id",
  "started_at",
  "completed_at",
  "total_questions",
  "correct_answers",
  "answered_questions",
] as const;

/**
 * Its mode as `review`, 1 or 0: a number is decoded in a fraction of the
 * work of an ENUM's text, on every row of every page (decode.ts).
 */
const review = (mode: "mode" | "s.mode") =>
  sql<number | string>`(${sql.ref(mode)} = 'review')`.as("review");

/** A session's summary columns, of `practice_sessions`. */
export const summaryColumns = [...plainSummaryColumns, review("mode")] as const;

/** A session's summary columns, of `practice_sessions as s`. */
export const summaryColumnsOfS = [
  ...plainSummaryColumns.map((c) => `s.${c}` as const),
  review("s.mode"),
] as const;
