import { type Kysely, sql } from "kysely";

/**
 * practice_sessions.mode gains 'missed' (see ../mysql/0007-missed-mode.ts).
 * SQLite cannot change a CHECK constraint in place, so the table is rebuilt,
 * and with it the two tables that reference it: copies are made referencing
 * the new table, the old three dropped children first (so no ON DELETE
 * CASCADE fires), and the copies renamed, which points their references at
 * the final name. The migrator runs this in one transaction.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await rebuildSessions(db, ["full", "review", "missed"]);
}

/** Missed sessions are deleted (their snapshots and answers with them): the old CHECK refuses them. */
export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DELETE FROM practice_sessions WHERE mode = 'missed'`.execute(db);
  await rebuildSessions(db, ["full", "review"]);
}

async function rebuildSessions(db: Kysely<unknown>, modes: readonly string[]): Promise<void> {
  const { rows } = await sql<{ seq: number }>`
    SELECT seq FROM sqlite_sequence WHERE name = 'practice_session_answers'`.execute(db);
  const answerSequence = Number(rows[0]?.seq ?? 0);
  const sessionColumns =
    "id, user_id, quiz_id, started_at, completed_at, total_questions, correct_answers, answered_questions, mode";
  const statements = [
    `CREATE TABLE practice_sessions_new (
      id TEXT NOT NULL PRIMARY KEY,
      user_id TEXT NOT NULL,
      quiz_id INTEGER NOT NULL REFERENCES quizzes (id) ON DELETE CASCADE,
      started_at TEXT NOT NULL,
      completed_at TEXT NULL,
      total_questions INTEGER NOT NULL,
      correct_answers INTEGER NOT NULL DEFAULT 0,
      active INTEGER GENERATED ALWAYS AS (CASE WHEN completed_at IS NULL THEN 1 END) STORED,
      answered_questions INTEGER NOT NULL DEFAULT 0,
      mode TEXT NOT NULL DEFAULT 'full' CHECK (mode IN (${modes.map((m) => `'${m}'`).join(", ")}))
    )`,
    `INSERT INTO practice_sessions_new (${sessionColumns})
      SELECT ${sessionColumns} FROM practice_sessions`,
    `CREATE TABLE practice_session_questions_new (
      session_id TEXT NOT NULL REFERENCES practice_sessions_new (id) ON DELETE CASCADE,
      position INTEGER NOT NULL,
      question_id INTEGER NULL REFERENCES questions (id) ON DELETE SET NULL,
      PRIMARY KEY (session_id, position)
    ) WITHOUT ROWID`,
    `INSERT INTO practice_session_questions_new (session_id, position, question_id)
      SELECT session_id, position, question_id FROM practice_session_questions`,
    `CREATE TABLE practice_session_answers_new (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      session_id TEXT NOT NULL REFERENCES practice_sessions_new (id) ON DELETE CASCADE,
      question_id INTEGER NULL REFERENCES questions (id) ON DELETE SET NULL,
      user_answer TEXT NULL,
      is_correct INTEGER NULL,
      answered_at TEXT NOT NULL
    )`,
    `INSERT INTO practice_session_answers_new (id, session_id, question_id, user_answer, is_correct, answered_at)
      SELECT id, session_id, question_id, user_answer, is_correct, answered_at FROM practice_session_answers`,
    "DROP TABLE practice_session_answers",
    "DROP TABLE practice_session_questions",
    "DROP TABLE practice_sessions",
    "ALTER TABLE practice_sessions_new RENAME TO practice_sessions",
    "ALTER TABLE practice_session_questions_new RENAME TO practice_session_questions",
    "ALTER TABLE practice_session_answers_new RENAME TO practice_session_answers",
    // Answer ids are never reused, as before the rebuild.
    `UPDATE sqlite_sequence SET seq = MAX(seq, ${answerSequence}) WHERE name = 'practice_session_answers'`,
    "CREATE UNIQUE INDEX one_active_session ON practice_sessions (user_id, quiz_id, active)",
    `CREATE INDEX sessions_by_start ON practice_sessions
      (user_id, quiz_id, started_at, id, completed_at, total_questions, correct_answers,
       answered_questions, mode)`,
    "CREATE INDEX snapshot_by_question ON practice_session_questions (question_id)",
    "CREATE INDEX answers_in_order ON practice_session_answers (session_id, answered_at, id)",
    "CREATE UNIQUE INDEX one_answer_per_question ON practice_session_answers (session_id, question_id)",
    "CREATE INDEX answers_by_question ON practice_session_answers (question_id)",
  ];
  for (const statement of statements) await sql.raw(statement).execute(db);
}
