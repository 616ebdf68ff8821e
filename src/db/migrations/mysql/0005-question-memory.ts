import { type Kysely, sql } from "kysely";

/**
 * practice_question_memory: each learner's FSRS memory of each question they
 * answered (src/domain/memory.ts), and practice_sessions.mode, with
 * sessions_by_start rebuilt to cover it. DDL is not transactional: each step
 * is skipped when already done, so a migration cut off half-way can run again.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const collation = await noPadBinaryCollation(db);
  // memory_by_due: what is due for one learner and quiz is one index range,
  // whatever the learner's history on other quizzes.
  await sql
    .raw(
      `CREATE TABLE IF NOT EXISTS practice_question_memory (
        user_id VARCHAR(255) CHARACTER SET utf8mb4 COLLATE ${collation} NOT NULL,
        question_id BIGINT UNSIGNED NOT NULL,
        quiz_id BIGINT UNSIGNED NOT NULL,
        due_at DATETIME(3) NOT NULL,
        last_answered_at DATETIME(3) NOT NULL,
        last_correct BOOLEAN NOT NULL,
        reps INT UNSIGNED NOT NULL,
        lapses INT UNSIGNED NOT NULL,
        state TINYINT UNSIGNED NOT NULL,
        stability DOUBLE NOT NULL,
        difficulty DOUBLE NOT NULL,
        elapsed_days INT UNSIGNED NOT NULL,
        scheduled_days INT UNSIGNED NOT NULL,
        learning_steps INT UNSIGNED NOT NULL,
        PRIMARY KEY (user_id, question_id),
        KEY memory_by_due (user_id, quiz_id, due_at),
        CONSTRAINT memory_question_fk FOREIGN KEY (question_id) REFERENCES questions (id) ON DELETE CASCADE
      ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci`,
    )
    .execute(db);
  const { rows } = await sql<{ n: number }>`
    SELECT COUNT(*) AS n FROM information_schema.COLUMNS
    WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'practice_sessions'
      AND COLUMN_NAME = 'mode'`.execute(db);
  if (Number(rows[0]?.n ?? 0) === 0) {
    await sql`ALTER TABLE practice_sessions
      ADD COLUMN mode ENUM('full', 'review') CHARACTER SET ascii NOT NULL DEFAULT 'full' AFTER answered_questions,
      DROP KEY sessions_by_start,
      ADD KEY sessions_by_start (user_id, quiz_id, started_at, id, completed_at,
        total_questions, correct_answers, answered_questions, mode)`.execute(db);
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE practice_sessions
    DROP KEY sessions_by_start,
    ADD KEY sessions_by_start (user_id, quiz_id, started_at, id, completed_at,
      total_questions, correct_answers, answered_questions),
    DROP COLUMN mode`.execute(db);
  await sql`DROP TABLE IF EXISTS practice_question_memory`.execute(db);
}

/** The NO PAD binary collation of practice_sessions.user_id (0002-user-id-no-pad.ts). */
async function noPadBinaryCollation(db: Kysely<unknown>): Promise<string> {
  const { rows } = await sql<{ v: string }>`SELECT VERSION() AS v`.execute(db);
  return /mariadb/i.test(rows[0]?.v ?? "") ? "utf8mb4_nopad_bin" : "utf8mb4_0900_bin";
}
