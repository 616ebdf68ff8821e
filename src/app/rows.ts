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
  answered_questions: number | null;
}

export function toSummary(row: SummaryColumns): SessionSummary {
  return {
    id: row.id ?? "",
    quizId: row.quiz_id ?? "",
    startedAt: row.started_at ?? new Date(0),
    completedAt: row.completed_at,
    totalQuestions: row.total_questions ?? 0,
    correctAnswers: row.correct_answers ?? 0,
    answeredQuestions: row.answered_questions ?? 0,
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
 * answer, in any order), its answers oldest first; undefined if there are no
 * rows or their session columns are null.
 */
export function toSession(rows: readonly (SummaryColumns & AnswerColumns)[]): Session | undefined {
  const first = rows[0];
  if (first === undefined || first.id === null) return undefined;
  const answered = rows.filter((r) => r.answer_id !== null).sort(chronologically);
  return { ...toSummary(first), answers: answered.flatMap(toAnswer) };
}

/** Oldest first: by answered_at, then by id (decimal text: shorter is smaller). */
function chronologically(a: AnswerColumns, b: AnswerColumns): number {
  const byTime = (a.answered_at?.getTime() ?? 0) - (b.answered_at?.getTime() ?? 0);
  if (byTime !== 0) return byTime;
  const x = a.answer_id ?? "";
  const y = b.answer_id ?? "";
  return x.length - y.length || (x < y ? -1 : x > y ? 1 : 0);
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
