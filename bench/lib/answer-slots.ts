import { randomUUID } from "node:crypto";
import { createPool } from "mysql2/promise";
import { insertQuiz, MAIN_USER, QUESTIONS } from "./data.js";

/** A question of a session in progress that has no answer yet. */
export interface AnswerSlot {
  sessionId: string;
  questionId: string;
}

/**
 * `n` unanswered questions of MAIN_USER's sessions in progress, made straight in the
 * database at `url`: one quiz of QUESTIONS questions per session (a user has one session in
 * progress per quiz), snapshots included. Each answer of the bench takes one.
 */
export async function answerSlots(url: string, n: number): Promise<AnswerSlot[]> {
  const pool = createPool({ uri: url, connectionLimit: 1, timezone: "Z" });
  try {
    const [guide] = await pool.query("INSERT INTO study_guides (title) VALUES ('answers')");
    const guideId = (guide as { insertId: number }).insertId;
    const slots: AnswerSlot[] = [];
    while (slots.length < n) {
      const quizId = await insertQuiz(pool, guideId, "answers");
      const sessionId = randomUUID();
      await pool.query(
        "INSERT INTO practice_sessions (id, user_id, quiz_id, started_at, total_questions, correct_answers) VALUES (?, ?, ?, UTC_TIMESTAMP(3), ?, 0)",
        [sessionId, MAIN_USER, quizId, QUESTIONS],
      );
      await pool.query(
        "INSERT INTO practice_session_questions (session_id, position, question_id) SELECT ?, position, id FROM questions WHERE quiz_id = ?",
        [sessionId, quizId],
      );
      const [ids] = await pool.query("SELECT id FROM questions WHERE quiz_id = ? ORDER BY id", [
        quizId,
      ]);
      for (const { id } of ids as { id: number }[])
        slots.push({ sessionId, questionId: String(id) });
    }
    return slots.slice(0, n);
  } finally {
    await pool.end();
  }
}
