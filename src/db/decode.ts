import type { Answer, Session, SessionMode, SessionSummary } from "../domain/session.js";

/**
 * Rows to domain values. LEFT JOINed columns come back nullable: what a null
 * means (no session, no answer) is said once here.
 */

export interface SummaryColumns {
  id: string | null;
  quiz_id: string | null;
  started_at: Date | null;
  completed_at: Date | null;
  total_questions: number | null;
  correct_answers: number | null;
  answered_questions: number | null;
  /** 0 full, 1 review, 2 missed (session-columns.ts); a string where the driver gives one. */
  mode_code: number | string | null;
}

export interface AnswerColumns {
  answer_id: string | null;
  question_id: string | null;
  user_answer: string | null;
  is_correct: number | null;
  answered_at: Date | null;
}

/** Modes by session-columns.ts's code. */
const MODES: readonly SessionMode[] = ["full", "review", "missed"];

/** The session of a row, or undefined when the row has none (a LEFT JOIN that matched nothing). */
export function toSummary(row: SummaryColumns): SessionSummary | undefined {
  const {
    id,
    quiz_id,
    started_at,
    total_questions,
    correct_answers,
    answered_questions,
    mode_code,
  } = row;
  if (id === null) return undefined;
  if (
    quiz_id === null ||
    started_at === null ||
    total_questions === null ||
    correct_answers === null ||
    answered_questions === null ||
    mode_code === null
  ) {
    // NOT NULL columns of a matched row: only a broken statement gets here.
    throw new Error("a session row with null columns");
  }
  return {
    id,
    quizId: quiz_id,
    startedAt: started_at,
    completedAt: row.completed_at,
    totalQuestions: total_questions,
    correctAnswers: correct_answers,
    answeredQuestions: answered_questions,
    mode: MODES[Number(mode_code)] ?? "full",
  };
}

/**
 * The session in the rows of a session-with-answers statement (one row per
 * answer, in any order), its answers oldest first; undefined if there are no
 * rows or their session columns are null.
 */
export function toSession(rows: readonly (SummaryColumns & AnswerColumns)[]): Session | undefined {
  const first = rows[0];
  const summary = first && toSummary(first);
  if (summary === undefined) return undefined;
  const answers = rows.flatMap(toAnswer).sort(chronologically);
  return { ...summary, answers: answers.map(({ answer }) => answer) };
}

/** The answer of a row, or undefined when the row has none (a LEFT JOIN that matched nothing). */
export function toStoredAnswer(row: AnswerColumns): Answer | undefined {
  return toAnswer(row)[0]?.answer;
}

type Numbered = { id: string; answer: Answer };

/** Oldest first: by answered_at, then by id (decimal text: shorter is smaller). */
function chronologically(a: Numbered, b: Numbered): number {
  const byTime = a.answer.answeredAt.getTime() - b.answer.answeredAt.getTime();
  if (byTime !== 0) return byTime;
  return a.id.length - b.id.length || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

function toAnswer(row: AnswerColumns): Numbered[] {
  if (row.answer_id === null || row.answered_at === null) return [];
  return [
    {
      id: row.answer_id,
      answer: {
        questionId: row.question_id,
        userAnswer: row.user_answer,
        isCorrect: row.is_correct === null ? null : row.is_correct === 1,
        answeredAt: row.answered_at,
      },
    },
  ];
}
