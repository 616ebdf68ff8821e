import { type Kysely, sql } from "kysely";

/**
 * practice_question_memory and practice_sessions.mode (see
 * ../mysql/0005-question-memory.ts), with sessions_by_start rebuilt to cover
 * mode. SQLite DDL is transactional: the migrator runs this in one transaction.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const statements = [
    `CREATE TABLE IF NOT EXISTS practice_question_memory (
      user_id TEXT NOT NULL,
      question_id INTEGER NOT NULL REFERENCES questions (id) ON DELETE CASCADE,
      quiz_id INTEGER NOT NULL,
      due_at TEXT NOT NULL,
      last_answered_at TEXT NOT NULL,
      last_correct INTEGER NOT NULL,
      reps INTEGER NOT NULL,
      lapses INTEGER NOT NULL,
      state INTEGER NOT NULL,
      stability REAL NOT NULL,
      difficulty REAL NOT NULL,
      elapsed_days INTEGER NOT NULL,
      scheduled_days INTEGER NOT NULL,
      learning_steps INTEGER NOT NULL,
      PRIMARY KEY (user_id, question_id)
    )`,
    "CREATE INDEX IF NOT EXISTS memory_by_due ON practice_question_memory (user_id, quiz_id, due_at)",
    `ALTER TABLE practice_sessions ADD COLUMN mode TEXT NOT NULL DEFAULT 'full'
      CHECK (mode IN ('full', 'review'))`,
    "DROP INDEX IF EXISTS sessions_by_start",
    `CREATE INDEX sessions_by_start ON practice_sessions
      (user_id, quiz_id, started_at, id, completed_at, total_questions, correct_answers,
       answered_questions, mode)`,
  ];
  for (const statement of statements) await sql.raw(statement).execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  const statements = [
    "DROP INDEX IF EXISTS sessions_by_start",
    `CREATE INDEX sessions_by_start ON practice_sessions
      (user_id, quiz_id, started_at, id, completed_at, total_questions, correct_answers, answered_questions)`,
    "ALTER TABLE practice_sessions DROP COLUMN mode",
    "DROP TABLE IF EXISTS practice_question_memory",
  ];
  for (const statement of statements) await sql.raw(statement).execute(db);
}
