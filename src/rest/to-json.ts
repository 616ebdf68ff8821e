import type { Quiz } from "../domain/quiz.js";
import { scorePercentage } from "../domain/scoring.js";
import {
  type Answer,
  expiresAt,
  type SessionSummary,
  type SnapshotQuestion,
} from "../domain/session.js";

/**
 * The REST JSON shapes: snake_case names of the spec, RFC 3339 UTC times with
 * milliseconds, and nullable fields present as null, never omitted.
 */

export function summaryToJson(s: SessionSummary) {
  return {
    id: s.id,
    quiz_id: s.quizId,
    started_at: s.startedAt.toISOString(),
    completed_at: s.completedAt?.toISOString() ?? null,
    total_questions: s.totalQuestions,
    correct_answers: s.correctAnswers,
    score_percentage: scorePercentage(s.correctAnswers, s.totalQuestions, s.completedAt),
    answered_questions: s.answeredQuestions,
    expires_at: expiresAt(s)?.toISOString() ?? null,
  };
}

/** A session with its answers, oldest first: the start/resume response. */
export function sessionToJson(s: SessionSummary, answers: Answer[]) {
  return { ...summaryToJson(s), answers: answers.map(answerToJson) };
}

export function answerToJson(a: Answer) {
  return {
    question_id: a.questionId,
    user_answer: a.userAnswer,
    is_correct: a.isCorrect,
    answered_at: a.answeredAt.toISOString(),
  };
}

/** One snapshot entry; `correct_answer` is set only in a completed session's review. */
export function snapshotQuestionToJson(q: SnapshotQuestion) {
  return { position: q.position, question_id: q.questionId, correct_answer: q.correctAnswer };
}

/** Start (201/200) and GET /sessions/{id}: the session, its answers and its snapshot. */
export function sessionDetailToJson(
  s: SessionSummary,
  answers: Answer[],
  questions: SnapshotQuestion[],
) {
  return { ...sessionToJson(s, answers), questions: questions.map(snapshotQuestionToJson) };
}

/** GET /quizzes/{quiz_id}: the quiz's content, never a correct answer. */
export function quizToJson(q: Quiz) {
  return {
    id: q.id,
    study_guide_id: q.studyGuideId,
    title: q.title,
    questions: q.questions.map((x) => ({ id: x.id, position: x.position, prompt: x.prompt })),
  };
}

export type QuizJson = ReturnType<typeof quizToJson>;
export type SummaryJson = ReturnType<typeof summaryToJson>;
export type SessionJson = ReturnType<typeof sessionToJson>;
export type SessionDetailJson = ReturnType<typeof sessionDetailToJson>;
export type AnswerJson = ReturnType<typeof answerToJson>;
export interface PageJson {
  sessions: SummaryJson[];
  next_cursor: string | null;
  has_more: boolean;
}
