import { type Card, createEmptyCard, fsrs, generatorParameters, Rating, type State } from "ts-fsrs";
import { notBefore } from "./clock.js";

/**
 * Spaced repetition: a learner's memory of each question, scheduled by FSRS
 * (ts-fsrs 5, default parameters, fuzz off, so that any client can compute
 * the same due dates). A correct answer rates the question Good, a wrong one
 * Again, at the answer's time. A question never answered has no memory.
 */

/** ts-fsrs's Card for one learner and question, as stored (practice_question_memory). */
export interface QuestionMemory {
  /** When the question is next due for review (Card.due). */
  dueAt: Date;
  /** The last answer's time (Card.last_review). */
  lastAnsweredAt: Date;
  lastCorrect: boolean;
  reps: number;
  lapses: number;
  /** Card.state: 0 new, 1 learning, 2 review, 3 relearning. */
  state: number;
  stability: number;
  difficulty: number;
  elapsedDays: number;
  scheduledDays: number;
  learningSteps: number;
}

/** Questions in a review session at most. */
export const MAX_REVIEW_QUESTIONS = 20;

const scheduler = fsrs(generatorParameters({ enable_fuzz: false }));

/**
 * The memory after an answer at `answeredAt`. An answer recorded with a time
 * before the previous one (clocks of two replicas disagree) counts at the
 * previous one's time: FSRS refuses to go back in time.
 */
export function rememberAnswer(
  previous: QuestionMemory | undefined,
  correct: boolean,
  answeredAt: Date,
): QuestionMemory {
  const at = notBefore(answeredAt, previous?.lastAnsweredAt);
  const card = previous === undefined ? createEmptyCard(at) : toCard(previous);
  const next = scheduler.next(card, at, correct ? Rating.Good : Rating.Again).card;
  return {
    dueAt: next.due,
    lastAnsweredAt: at,
    lastCorrect: correct,
    reps: next.reps,
    lapses: next.lapses,
    state: next.state,
    stability: next.stability,
    difficulty: next.difficulty,
    elapsedDays: next.elapsed_days,
    scheduledDays: next.scheduled_days,
    learningSteps: next.learning_steps,
  };
}

function toCard(m: QuestionMemory): Card {
  return {
    due: m.dueAt,
    stability: m.stability,
    difficulty: m.difficulty,
    elapsed_days: m.elapsedDays,
    scheduled_days: m.scheduledDays,
    learning_steps: m.learningSteps,
    reps: m.reps,
    lapses: m.lapses,
    state: m.state as State,
    last_review: m.lastAnsweredAt,
  };
}

/** One question due for review, as ListDueQuestions shows it. */
export interface DueQuestion {
  questionId: string;
  /** 1-based order of the question in the quiz now (GetQuiz's numbering). */
  position: number;
  dueAt: Date;
  lastAnsweredAt: Date;
  lastCorrect: boolean;
  reps: number;
  lapses: number;
}

/** A page of what is due on one quiz for one learner; the counts are of the whole quiz. */
export interface DueQuestions {
  /** Due now, this page of them: earliest due first, then by position. */
  questions: DueQuestion[];
  /** Questions of the quiz due now, on every page. */
  dueCount: number;
  /** Live questions of the quiz the learner never answered. */
  newCount: number;
  /** The earliest due time after now, or null. */
  nextDueAt: Date | null;
  /** Where the next page starts; undefined on the last page. */
  next: { dueAt: Date; questionId: string } | undefined;
}
