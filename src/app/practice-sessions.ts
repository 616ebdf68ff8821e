import { ConnectError } from "@connectrpc/connect";
import { v7 as uuidv7 } from "uuid";
import type { Db } from "../db/database.js";
import { isDatabaseUnavailable, isDuplicateKey, isTransientConflict } from "../db/errors.js";
import {
  deleteStaleSession,
  findSessionPage,
  findStartState,
  insertSessionCountingQuestions,
  insertSnapshot,
  ONE_ACTIVE_SESSION_KEY,
} from "../db/practice-sessions-repository.js";
import type { Clock } from "../domain/clock.js";
import { decodeCursor, encodeCursor } from "../domain/cursor.js";
import { errors } from "../domain/errors.js";
import {
  type Answer,
  DEFAULT_PAGE_SIZE,
  isDatabaseId,
  isStale,
  MAX_PAGE_SIZE,
  type Session,
  type SessionStatus,
  type SessionSummary,
  staleCutoff,
} from "../domain/session.js";

export interface ListSessionsInput {
  quizId: string;
  status?: SessionStatus;
  /** 1..MAX_PAGE_SIZE; undefined means DEFAULT_PAGE_SIZE. */
  limit?: number;
  /** A next_cursor from a previous page; undefined or "" for the first page. */
  cursor?: string;
}

export interface SessionPage {
  sessions: SessionSummary[];
  /** Null on the last page. */
  nextCursor: string | null;
  hasMore: boolean;
}

export interface StartResult {
  session: Session;
  /** True if this call created the session, false if it resumed one. */
  created: boolean;
}

/** How often a start runs again after losing a race or a deadlock. */
const START_ATTEMPTS = 5;

/**
 * The practice sessions use cases, shared by every transport. Each method
 * validates its input, talks to the database through the repository, and
 * throws only `ConnectError`s: database failures become `unavailable` (or
 * `internal`) with the cause kept for logs, never for the client.
 */
export class PracticeSessions {
  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly newSessionId: () => string = uuidv7,
  ) {}

  /** One page of the user's sessions on a quiz, newest first. */
  async listSessions(userId: string, input: ListSessionsInput): Promise<SessionPage> {
    const limit = input.limit ?? DEFAULT_PAGE_SIZE;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE_SIZE) {
      throw errors.invalidArgument(`limit must be an integer from 1 to ${MAX_PAGE_SIZE}`);
    }
    const after = input.cursor ? decodeCursor(input.cursor) : undefined;
    if (!isDatabaseId(input.quizId)) throw errors.quizNotFound();

    const rows = await guard(() =>
      findSessionPage(this.db, {
        userId,
        quizId: input.quizId,
        status: input.status,
        take: limit + 1,
        after,
      }),
    );
    if (rows.length === 0) throw errors.quizNotFound();
    const sessions = rows.flatMap((r) => (r.id === null ? [] : [toSummary(r)]));
    const hasMore = sessions.length > limit;
    if (hasMore) sessions.length = limit;
    const last = sessions.at(-1);
    return {
      sessions,
      hasMore,
      nextCursor: hasMore && last ? encodeCursor({ startedAt: last.startedAt, id: last.id }) : null,
    };
  }

  /**
   * Starts a session on a live quiz, or resumes the user's in-progress one.
   * A stale in-progress session (started over 7 days ago) is deleted first,
   * and a fresh one created. When starts race, the unique key lets one
   * insert; the others read the winner's session and resume it.
   */
  async startSession(userId: string, quizId: string): Promise<StartResult> {
    if (!isDatabaseId(quizId)) throw errors.quizNotFound();
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.startOnce(userId, quizId);
      } catch (err) {
        const lostRace = isDuplicateKey(err, ONE_ACTIVE_SESSION_KEY) || isTransientConflict(err);
        if (!lostRace || attempt >= START_ATTEMPTS) throw toServiceError(err);
      }
    }
  }

  private async startOnce(userId: string, quizId: string): Promise<StartResult> {
    const now = this.clock.now();
    const rows = await findStartState(this.db, userId, quizId);
    const first = rows[0];
    if (first === undefined) throw errors.quizNotFound();
    if (first.id !== null) {
      const session: Session = { ...toSummary(first), answers: rows.flatMap(toAnswer) };
      if (!isStale(session, now)) return { session, created: false };
      await deleteStaleSession(this.db, session.id, staleCutoff(now));
    }

    const id = this.newSessionId();
    const totalQuestions = await this.db.transaction().execute(async (trx) => {
      const inserted = await insertSessionCountingQuestions(trx, {
        id,
        user_id: userId,
        quiz_id: quizId,
        started_at: now,
      });
      if (inserted === 0) return 0;
      return insertSnapshot(trx, id, quizId);
    });
    if (totalQuestions === 0) throw errors.quizHasNoQuestions();
    return {
      created: true,
      session: {
        id,
        quizId,
        startedAt: now,
        completedAt: null,
        totalQuestions,
        correctAnswers: 0,
        answers: [],
      },
    };
  }
}

/** Runs a database call, turning its failures into service errors. */
async function guard<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    throw toServiceError(err);
  }
}

/** Keeps ConnectErrors; database outages become `unavailable`, the rest `internal`. */
export function toServiceError(err: unknown): ConnectError {
  if (err instanceof ConnectError) return err;
  return isDatabaseUnavailable(err) ? errors.unavailable(err) : errors.internal(err);
}

interface SummaryColumns {
  id: string | null;
  quiz_id: string | null;
  started_at: Date | null;
  completed_at: Date | null;
  total_questions: number | null;
  correct_answers: number | null;
}

function toSummary(row: SummaryColumns): SessionSummary {
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
