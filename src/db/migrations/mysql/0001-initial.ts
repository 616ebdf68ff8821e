import { type Kysely, sql } from "kysely";

/**
 * Content tables (other services own their data; their names are fixed) and
 * the practice tables. MySQL DDL is not transactional, hence IF NOT EXISTS:
 * a migration cut off half-way can run again.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const statements = [
    `CREATE TABLE IF NOT EXISTS study_guides (
      id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
      title VARCHAR(255) NOT NULL,
      created_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
      deleted_at DATETIME(3) NULL
    )`,
    `CREATE TABLE IF NOT EXISTS quizzes (
      id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
      study_guide_id BIGINT UNSIGNED NOT NULL,
      title VARCHAR(255) NOT NULL,
      created_by VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
      created_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
      deleted_at DATETIME(3) NULL,
      CONSTRAINT quizzes_study_guide_fk FOREIGN KEY (study_guide_id) REFERENCES study_guides (id)
    )`,
    `CREATE TABLE IF NOT EXISTS questions (
      id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
      quiz_id BIGINT UNSIGNED NOT NULL,
      position INT NOT NULL,
      prompt TEXT NOT NULL,
      correct_answer VARCHAR(1000) NOT NULL,
      created_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
      KEY questions_by_quiz (quiz_id, position, id),
      CONSTRAINT questions_quiz_fk FOREIGN KEY (quiz_id) REFERENCES quizzes (id) ON DELETE CASCADE
    )`,
    // user_id is compared byte for byte (utf8mb4_bin): "alice" and "Alice" are two users.
    // sessions_by_start covers every column a list page reads, or MariaDB prefers a
    // ref scan on (user_id, quiz_id) and reads the history down to the cursor.
    // active is 1 while completed_at is NULL, else NULL; NULLs never collide in a
    // UNIQUE key, so one_active_session allows one in-progress session per user and quiz.
    `CREATE TABLE IF NOT EXISTS practice_sessions (
      id CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY,
      user_id VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
      quiz_id BIGINT UNSIGNED NOT NULL,
      started_at DATETIME(3) NOT NULL,
      completed_at DATETIME(3) NULL,
      total_questions INT UNSIGNED NOT NULL,
      correct_answers INT UNSIGNED NOT NULL DEFAULT 0,
      active TINYINT GENERATED ALWAYS AS (IF(completed_at IS NULL, 1, NULL)) STORED,
      UNIQUE KEY one_active_session (user_id, quiz_id, active),
      KEY sessions_by_start (user_id, quiz_id, started_at, id, completed_at, total_questions, correct_answers),
      CONSTRAINT practice_sessions_quiz_fk FOREIGN KEY (quiz_id) REFERENCES quizzes (id) ON DELETE CASCADE
    )`,
    `CREATE TABLE IF NOT EXISTS practice_session_questions (
      session_id CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      position INT UNSIGNED NOT NULL,
      question_id BIGINT UNSIGNED NULL,
      PRIMARY KEY (session_id, position),
      KEY snapshot_by_question (question_id),
      CONSTRAINT snapshot_session_fk FOREIGN KEY (session_id) REFERENCES practice_sessions (id) ON DELETE CASCADE,
      CONSTRAINT snapshot_question_fk FOREIGN KEY (question_id) REFERENCES questions (id) ON DELETE SET NULL
    )`,
    `CREATE TABLE IF NOT EXISTS practice_session_answers (
      id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
      session_id CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      question_id BIGINT UNSIGNED NULL,
      user_answer TEXT NULL,
      is_correct BOOLEAN NULL,
      answered_at DATETIME(3) NOT NULL,
      KEY answers_in_order (session_id, answered_at, id),
      UNIQUE KEY one_answer_per_question (session_id, question_id),
      CONSTRAINT answers_session_fk FOREIGN KEY (session_id) REFERENCES practice_sessions (id) ON DELETE CASCADE,
      CONSTRAINT answers_question_fk FOREIGN KEY (question_id) REFERENCES questions (id) ON DELETE SET NULL
    )`,
  ];
  for (const statement of statements) {
    await sql
      .raw(`${statement} ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci`)
      .execute(db);
  }
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
