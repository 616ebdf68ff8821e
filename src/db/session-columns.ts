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
 * Its mode as `mode_code`, 0 full, 1 review, 2 missed: a number is decoded in
 * a fraction of the work of an ENUM's text, on every row of every page
 * (decode.ts).
 */
const modeCode = (mode: "mode" | "s.mode") =>
  sql<
    number | string
  >`(CASE ${sql.ref(mode)} WHEN 'review' THEN 1 WHEN 'missed' THEN 2 ELSE 0 END)`.as("mode_code");

/** A session's summary columns, of `practice_sessions`. */
export const summaryColumns = [...plainSummaryColumns, modeCode("mode")] as const;

/** A session's summary columns, of `practice_sessions as s`. */
export const summaryColumnsOfS = [
  ...plainSummaryColumns.map((c) => `s.${c}` as const),
  modeCode("s.mode"),
] as const;
