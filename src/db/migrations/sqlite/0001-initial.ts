import { type Kysely, sql } from "kysely";

/**
 * The MySQL schema (../mysql/0001-initial.ts) in SQLite's words. Times are
 * ISO 8601 text in UTC with milliseconds (see ../../sqlite.ts); text compares
 * byte for byte (BINARY), so "alice" and "Alice" are two users, as in MySQL.
 */
const NOW = `(strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))`;

export async function up(db: Kysely<unknown>): Promise<void> {
  const statements = [
    `CREATE TABLE IF NOT EXISTS study_guides (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      title TEXT NOT NULL,
      created_at TEXT NOT NULL DEFAULT ${NOW},
      deleted_at TEXT NULL
    )`,
    `CREATE TABLE IF NOT EXISTS quizzes (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      study_guide_id INTEGER NOT NULL REFERENCES study_guides (id),
      title TEXT NOT NULL,
      created_by TEXT NULL,
      created_at TEXT NOT NULL DEFAULT ${NOW},
      deleted_at TEXT NULL
    )`,
    `CREATE TABLE IF NOT EXISTS questions (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      quiz_id INTEGER NOT NULL REFERENCES quizzes (id) ON DELETE CASCADE,
      position INTEGER NOT NULL,
      prompt TEXT NOT NULL,
      correct_answer TEXT NOT NULL,
      created_at TEXT NOT NULL DEFAULT ${NOW}
    )`,
    "CREATE INDEX IF NOT EXISTS questions_by_quiz ON questions (quiz_id, position, id)",
    `CREATE TABLE IF NOT EXISTS practice_sessions (
      id TEXT NOT NULL PRIMARY KEY,
      user_id TEXT NOT NULL,
      quiz_id INTEGER NOT NULL REFERENCES quizzes (id) ON DELETE CASCADE,
      started_at TEXT NOT NULL,
      completed_at TEXT NULL,
      total_questions INTEGER NOT NULL,
      correct_answers INTEGER NOT NULL DEFAULT 0,
      active INTEGER GENERATED ALWAYS AS (CASE WHEN completed_at IS NULL THEN 1 END) STORED
    )`,
    "CREATE UNIQUE INDEX IF NOT EXISTS one_active_session ON practice_sessions (user_id, quiz_id, active)",
    `CREATE INDEX IF NOT EXISTS sessions_by_start ON practice_sessions
      (user_id, quiz_id, started_at, id, completed_at, total_questions, correct_answers)`,
    `CREATE TABLE IF NOT EXISTS practice_session_questions (
      session_id TEXT NOT NULL REFERENCES practice_sessions (id) ON DELETE CASCADE,
      position INTEGER NOT NULL,
      question_id INTEGER NULL REFERENCES questions (id) ON DELETE SET NULL,
      PRIMARY KEY (session_id, position)
    ) WITHOUT ROWID`,
    "CREATE INDEX IF NOT EXISTS snapshot_by_question ON practice_session_questions (question_id)",
    `CREATE TABLE IF NOT EXISTS practice_session_answers (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      session_id TEXT NOT NULL REFERENCES practice_sessions (id) ON DELETE CASCADE,
      question_id INTEGER NULL REFERENCES questions (id) ON DELETE SET NULL,
      user_answer TEXT NULL,
      is_correct INTEGER NULL,
      answered_at TEXT NOT NULL
    )`,
    "CREATE INDEX IF NOT EXISTS answers_in_order ON practice_session_answers (session_id, answered_at, id)",
    "CREATE UNIQUE INDEX IF NOT EXISTS one_answer_per_question ON practice_session_answers (session_id, question_id)",
    "CREATE INDEX IF NOT EXISTS answers_by_question ON practice_session_answers (question_id)",
  ];
  for (const statement of statements) await sql.raw(statement).execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of [
    "practice_session_answers",
    "practice_session_questions",
    "practice_sessions",
    "questions",
    "quizzes",
    "study_guides",
  ]) {
    await sql.raw(`DROP TABLE IF EXISTS ${table}`).execute(db);
  }
}
