import { isoTime } from "../domain/iso-time.js";
import type { DueQuestions } from "../domain/memory.js";
import type { Quiz } from "../domain/quiz.js";
import type {
  Answer,
  SessionProgress,
  SessionSummary,
  SnapshotQuestion,
} from "../domain/session.js";
import type {
  AnswerJson,
  DueQuestionsJson,
  QuizJson,
  SessionDetailJson,
  SessionJson,
  SessionSummaryJson,
  SnapshotQuestionJson,
} from "./schemas.js";

/**
 * Domain values to the REST JSON of rest/schemas.ts: the types come from the
 * schemas, so a field the schema lacks (or misses) does not compile.
 */

/** A session with its score and expiry, as the use cases return it (domain withProgress). */
type View = SessionSummary & SessionProgress;

export function summaryToJson(s: View): SessionSummaryJson {
  return {
    id: s.id,
    quiz_id: s.quizId,
    started_at: isoTime(s.startedAt.getTime()),
    completed_at: s.completedAt ? isoTime(s.completedAt.getTime()) : null,
    total_questions: s.totalQuestions,
    correct_answers: s.correctAnswers,
    score_percentage: s.scorePercentage,
    answered_questions: s.answeredQuestions,
    expires_at: s.expiresAt ? isoTime(s.expiresAt.getTime()) : null,
    mode: s.mode,
  };
}

/** GET /quizzes/{quiz_id}/review. */
export function dueQuestionsToJson(
  due: DueQuestions & { nextCursor: string | undefined },
): DueQuestionsJson {
  return {
    questions: due.questions.map((q) => ({
      question_id: q.questionId,
      position: q.position,
      due_at: isoTime(q.dueAt.getTime()),
      last_answered_at: isoTime(q.lastAnsweredAt.getTime()),
      last_correct: q.lastCorrect,
      reps: q.reps,
      lapses: q.lapses,
    })),
    due_count: due.dueCount,
    new_count: due.newCount,
    next_due_at: due.nextDueAt ? isoTime(due.nextDueAt.getTime()) : null,
    next_cursor: due.nextCursor ?? null,
  };
}

export function answerToJson(a: Answer): AnswerJson {
  return {
    question_id: a.questionId,
    user_answer: a.userAnswer,
    is_correct: a.isCorrect,
    answered_at: isoTime(a.answeredAt.getTime()),
  };
}

/** A session with its answers, oldest first: the completion response. */
export function sessionToJson(s: View, answers: Answer[]): SessionJson {
  return { ...summaryToJson(s), answers: answers.map(answerToJson) };
}

/** One snapshot entry; `correct_answer` is set only in a completed session's review. */
function snapshotQuestionToJson(q: SnapshotQuestion): SnapshotQuestionJson {
  return { position: q.position, question_id: q.questionId, correct_answer: q.correctAnswer };
}

/** Start (201/200) and GET /sessions/{id}: the session, its answers and its snapshot. */
export function sessionDetailToJson(
  s: View,
  answers: Answer[],
  questions: SnapshotQuestion[],
): SessionDetailJson {
  return { ...sessionToJson(s, answers), questions: questions.map(snapshotQuestionToJson) };
}

/** GET /quizzes/{quiz_id}: the quiz's content, never a correct answer. */
export function quizToJson(q: Quiz): QuizJson {
  return {
    id: q.id,
    study_guide_id: q.studyGuideId,
    title: q.title,
    questions: q.questions.map((x) => ({ id: x.id, position: x.position, prompt: x.prompt })),
  };
}
