import { createPool } from "mysql2/promise";
import { MAIN_USER } from "./data.js";

/** Questions per filler quiz of the memory history. */
const FILLER_QUESTIONS = 100;
const BATCH = 5_000;
const MINUTE = 60_000;

/**
 * MAIN_USER's spaced-repetition memory in the bench database: one quiz of 10
 * questions with memory (5 due now, 5 later), and `grow(total)` adds filler
 * quizzes, their questions and MAIN_USER's memory of each until MAIN_USER
 * holds `total` memory rows (half of them due), as a long history would.
 */
export async function memoryHistory(url: string) {
  const pool = createPool({ uri: url, connectionLimit: 2, timezone: "Z" });
  const now = Date.now();
  let rows = 0;
  const [guide] = await pool.query("INSERT INTO study_guides (title) VALUES ('bench memory')");
  const guideId = (guide as { insertId: number }).insertId;

  /** A quiz with `n` questions; their ids. */
  const quizWith = async (title: string, n: number) => {
    const [q] = await pool.query("INSERT INTO quizzes (study_guide_id, title) VALUES (?, ?)", [
      guideId,
      title,
    ]);
    const quizId = String((q as { insertId: number }).insertId);
    await pool.query("INSERT INTO questions (quiz_id, position, prompt, correct_answer) VALUES ?", [
      Array.from({ length: n }, (_, i) => [quizId, i + 1, `Q${i + 1}?`, `A${i + 1}`]),
    ]);
    const [ids] = await pool.query("SELECT id FROM questions WHERE quiz_id = ? ORDER BY id", [
      quizId,
    ]);
    return { quizId, questionIds: (ids as { id: number }[]).map((r) => r.id) };
  };

  /** MAIN_USER's memory of the questions, every other one due now. */
  const remember = async (quizId: string, questionIds: number[]) => {
    for (let i = 0; i < questionIds.length; i += BATCH) {
      const values = questionIds.slice(i, i + BATCH).map((id, j) => {
        const due = (i + j) % 2 === 0 ? now - (j + 1) * MINUTE : now + (j + 1) * MINUTE;
        return [
          MAIN_USER,
          id,
          quizId,
          new Date(due),
          new Date(due - 10 * MINUTE),
          1,
          1,
          0,
          1,
          2.3,
          2.1,
          0,
          0,
          1,
        ];
      });
      await pool.query(
        `INSERT INTO practice_question_memory (user_id, question_id, quiz_id, due_at,
          last_answered_at, last_correct, reps, lapses, state, stability, difficulty,
          elapsed_days, scheduled_days, learning_steps) VALUES ?`,
        [values],
      );
      rows += values.length;
    }
  };

  const review = await quizWith("review", 10);
  await remember(review.quizId, review.questionIds);
  let fillers = 0;
  return {
    /** The quiz whose due questions are read. */
    quizId: review.quizId,
    /** Adds filler memory until MAIN_USER has `total` rows. */
    async grow(total: number) {
      while (rows < total) {
        const n = Math.min(FILLER_QUESTIONS, total - rows);
        const filler = await quizWith(`filler ${fillers++}`, n);
        await remember(filler.quizId, filler.questionIds);
      }
      return rows;
    },
    close: () => pool.end(),
  };
}
