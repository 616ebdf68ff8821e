import type { Answer, Session, SessionSummary } from "../domain/session.js";

/**
 * Rows of the repository to domain values. Columns of LEFT JOINed tables come
 * back nullable; the queries guarantee which are set, these functions say so once.
 */

interface SummaryColumns {
  id: string | null;
  quiz_id: string | null;
  started_at: Date | null;
  completed_at: Date | null;
  total_questions: number | null;
  correct_answers: number | null;
}

export function toSummary(row: SummaryColumns): SessionSummary {
  return {
    id: row.id ?? "",
    quizId: row.quiz_id ?? "",
    startedAt: row.started_at ?? new Date(0),
    completedAt: row.completed_at,
    totalQuestions: row.total_questions ?? 0,
    correctAnswers: row.correct_answers ?? 0,
  };
}

interface AnswerColumns {
  answer_id: string | null;
  question_id: string | null;
  user_answer: string | null;
  is_correct: number | null;
  answered_at: Date | null;
}

/**
 * The session in the rows of a session-with-answers query (one row per
 * answer); undefined if there are no rows or their session columns are null.
 */
export function toSession(rows: readonly (SummaryColumns & AnswerColumns)[]): Session | undefined {
  const first = rows[0];
  if (first === undefined || first.id === null) return undefined;
  return { ...toSummary(first), answers: rows.flatMap(toAnswer) };
}

function toAnswer(row: AnswerColumns): Answer[] {
  if (row.answer_id === null || row.answered_at === null) return [];
  return [
    {
      questionId: row.question_id,
      userAnswer: row.user_answer,
      isCorrect: row.is_correct === null ? null : row.is_correct === 1,
      answeredAt: row.answered_at,
    },
  ];
}
