import type {
  ColumnType,
  Generated,
  GeneratedAlways,
  Insertable,
  Kysely,
  Selectable,
} from "kysely";
import type { SessionMode } from "../domain/session.js";

/**
 * The tables as Kysely sees them. BIGINT ids are read as strings so they keep
 * their precision; times are DATETIME(3) in UTC.
 */
export interface Database {
  study_guides: StudyGuideTable;
  quizzes: QuizTable;
  questions: QuestionTable;
  practice_sessions: PracticeSessionTable;
  practice_session_questions: PracticeSessionQuestionTable;
  practice_session_answers: PracticeSessionAnswerTable;
  practice_outbox: OutboxTable;
  practice_question_memory: QuestionMemoryTable;
}

/** A database handle or an open transaction: repositories take either. */
export type Db = Kysely<Database>;

type Id = ColumnType<string, string | undefined, never>;
type CreatedAt = ColumnType<Date, Date | undefined, never>;

export interface StudyGuideTable {
  id: Id;
  title: string;
  created_at: CreatedAt;
  deleted_at: Date | null;
}

export interface QuizTable {
  id: Id;
  study_guide_id: string;
  title: string;
  /** The user who wrote the quiz; it gives no access to anybody's sessions. */
  created_by: string | null;
  created_at: CreatedAt;
  deleted_at: Date | null;
}

export interface QuestionTable {
  id: Id;
  quiz_id: string;
  position: number;
  prompt: string;
  correct_answer: string;
  created_at: CreatedAt;
}

export interface PracticeSessionTable {
  /** UUIDv7 made by the service. */
  id: string;
  user_id: string;
  quiz_id: string;
  started_at: Date;
  completed_at: Date | null;
  total_questions: number;
  correct_answers: Generated<number>;
  /** Answers so far, moved with each answer (default 0). */
  answered_questions: Generated<number>;
  /** 1 while in progress, else NULL: the unique key (user_id, quiz_id, active) allows one. */
  active: GeneratedAlways<1 | null>;
  /** What the snapshot holds: the whole quiz, or the questions due at start (default 'full'). */
  mode: ColumnType<SessionMode, SessionMode | undefined, never>;
}

export interface PracticeSessionQuestionTable {
  session_id: string;
  /** 1-based order of the question in the quiz at session start. */
  position: number;
  /** NULL once the question is hard-deleted. */
  question_id: string | null;
}

export interface PracticeSessionAnswerTable {
  id: Generated<string>;
  session_id: string;
  question_id: string | null;
  user_answer: string | null;
  /** TINYINT(1): mysql2 reads 0/1. */
  is_correct: ColumnType<number | null, boolean | null, boolean | null>;
  answered_at: Date;
}

/** Events waiting to be published (src/db/outbox-repository.ts). */
export interface OutboxTable {
  /** Order of insertion; a session's events in the order they committed. BIGINT: a string on MySQL. */
  seq: ColumnType<string | number, never, never>;
  /** The CloudEvents id. */
  event_id: string;
  type: string;
  session_id: string;
  /** The event's time (when its change happened). */
  created_at: Date;
  /** The CloudEvent, JSON. */
  body: string;
  /** The writer's trace context, JSON (header name to value); null: written untraced. */
  trace_context: ColumnType<string | null, string | null | undefined, never>;
  /** A relay's claim on the row, epoch ms; 0 when unclaimed. BIGINT: a string on MySQL. */
  lease_until: ColumnType<string | number, number | undefined, number>;
}

/**
 * One learner's FSRS memory of one question (src/domain/memory.ts): ts-fsrs's
 * Card, column for column; gone with the question (ON DELETE CASCADE).
 */
export interface QuestionMemoryTable {
  user_id: string;
  question_id: string;
  /** The question's quiz, for the index that finds what is due per quiz. */
  quiz_id: string;
  /** Card.due */
  due_at: Date;
  /** Card.last_review */
  last_answered_at: Date;
  /** BOOLEAN: mysql2 reads 0/1. */
  last_correct: ColumnType<number, boolean, boolean>;
  reps: number;
  lapses: number;
  /** Card.state: 0 new, 1 learning, 2 review, 3 relearning. */
  state: number;
  stability: number;
  difficulty: number;
  elapsed_days: number;
  scheduled_days: number;
  learning_steps: number;
}

export type PracticeSessionRow = Selectable<PracticeSessionTable>;
export type NewPracticeSession = Insertable<PracticeSessionTable>;
export type NewAnswer = Insertable<PracticeSessionAnswerTable>;
