import { type Kysely, sql } from "kysely";

/**
 * practice_sessions.answered_questions (see ../mysql/0003-answered-questions.ts),
 * and sessions_by_start rebuilt to cover it. SQLite DDL is transactional:
 * the migrator runs this in one transaction.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const statements = [
    "ALTER TABLE practice_sessions ADD COLUMN answered_questions INTEGER NOT NULL DEFAULT 0",
    "DROP INDEX IF EXISTS sessions_by_start",
    `CREATE INDEX sessions_by_start ON practice_sessions
      (user_id, quiz_id, started_at, id, completed_at, total_questions, correct_answers, answered_questions)`,
    `UPDATE practice_sessions
      SET answered_questions = (SELECT COUNT(*) FROM practice_session_answers a WHERE a.session_id = practice_sessions.id)`,
  ];
  for (const statement of statements) await sql.raw(statement).execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  const statements = [
    "DROP INDEX IF EXISTS sessions_by_start",
    `CREATE INDEX sessions_by_start ON practice_sessions
      (user_id, quiz_id, started_at, id, completed_at, total_questions, correct_answers)`,
    "ALTER TABLE practice_sessions DROP COLUMN answered_questions",
  ];
  for (const statement of statements) await sql.raw(statement).execute(db);
}
