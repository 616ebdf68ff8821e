import { type Kysely, sql } from "kysely";

/**
 * practice_sessions.answered_questions, moved with each answer, and
 * sessions_by_start rebuilt to cover it. DDL is not transactional: the column
 * is added only if missing and the backfill can run again.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const { rows } = await sql<{ n: number }>`
    SELECT COUNT(*) AS n FROM information_schema.COLUMNS
    WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'practice_sessions'
      AND COLUMN_NAME = 'answered_questions'`.execute(db);
  if (Number(rows[0]?.n ?? 0) === 0) {
    await sql`ALTER TABLE practice_sessions
      ADD COLUMN answered_questions INT UNSIGNED NOT NULL DEFAULT 0 AFTER correct_answers,
      DROP KEY sessions_by_start,
      ADD KEY sessions_by_start (user_id, quiz_id, started_at, id, completed_at,
        total_questions, correct_answers, answered_questions)`.execute(db);
  }
  await sql`UPDATE practice_sessions s
    SET s.answered_questions = (SELECT COUNT(*) FROM practice_session_answers a WHERE a.session_id = s.id)
    WHERE EXISTS (SELECT 1 FROM practice_session_answers a WHERE a.session_id = s.id)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE practice_sessions
    DROP KEY sessions_by_start,
    ADD KEY sessions_by_start (user_id, quiz_id, started_at, id, completed_at,
      total_questions, correct_answers),
    DROP COLUMN answered_questions`.execute(db);
}
