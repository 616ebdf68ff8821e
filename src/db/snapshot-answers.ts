import type { Db } from "./database.js";

/**
 * A session's snapshot questions that still exist (`sq`, `q`), each with the
 * session's answer to it (`a`, null columns without one): the join that
 * answers, completions and missed questions start from. `db` may be an open
 * transaction.
 */
export function snapshotAnswers(db: Db, sessionId: string) {
  return db
    .selectFrom("practice_session_questions as sq")
    .innerJoin("questions as q", "q.id", "sq.question_id")
    .leftJoin("practice_session_answers as a", (join) =>
      join
        .onRef("a.session_id", "=", "sq.session_id")
        .onRef("a.question_id", "=", "sq.question_id"),
    )
    .where("sq.session_id", "=", sessionId);
}
