import { findSessionWithAnswers, findSnapshot } from "../db/practice-sessions-repository.js";
import { findSessionPage } from "../db/session-page.js";
import { decodeCursor, encodeCursor } from "../domain/cursor.js";
import {
  isDatabaseId,
  isSessionId,
  type Session,
  type SessionProgress,
  type SessionStatus,
  type SessionSummary,
  type SnapshotQuestion,
  toSnapshot,
  withProgress,
} from "../domain/session.js";
import { errors } from "./errors.js";
import { pageInput } from "./page-input.js";
import { guard } from "./service-errors.js";
import type { SessionsContext } from "./sessions-context.js";

export interface ListSessionsInput {
  quizId: string;
  status?: SessionStatus;
  /** 1..100 (the request's rule); undefined means DEFAULT_PAGE_SIZE. */
  limit?: number;
  /** A next_cursor from a previous page; undefined or "" for the first page. */
  cursor?: string;
}

export interface SessionPage {
  sessions: (SessionSummary & SessionProgress)[];
  /** Null on the last page. */
  nextCursor: string | null;
  hasMore: boolean;
}

export interface SessionDetail {
  session: Session & SessionProgress;
  questions: SnapshotQuestion[];
}

/** One page of the user's sessions on a quiz, newest first. */
export async function listSessions(
  { reads }: SessionsContext,
  userId: string,
  input: ListSessionsInput,
): Promise<SessionPage> {
  const { limit, after } = pageInput(input, decodeCursor);
  if (!isDatabaseId(input.quizId)) throw errors.quizNotFound();

  const sessions = await guard(() =>
    reads.read((db) =>
      findSessionPage(db, {
        userId,
        quizId: input.quizId,
        status: input.status,
        take: limit + 1,
        after,
      }),
    ),
  );
  if (sessions === undefined) throw errors.quizNotFound();
  const hasMore = sessions.length > limit;
  if (hasMore) sessions.length = limit;
  const last = sessions.at(-1);
  return {
    sessions: sessions.map(withProgress),
    hasMore,
    nextCursor: hasMore && last ? encodeCursor({ startedAt: last.startedAt, id: last.id }) : null,
  };
}

/**
 * One of the user's sessions with its answers and snapshot, whatever became
 * of its quiz. Once the session is completed, each snapshot question carries
 * its current correct answer, for review; while in progress, none does.
 */
export async function getSession(
  { reads }: SessionsContext,
  userId: string,
  sessionId: string,
): Promise<SessionDetail> {
  if (!isSessionId(sessionId)) throw errors.sessionNotFound();
  return guard(async () => {
    const [found, snapshot] = await reads.read((db) =>
      Promise.all([findSessionWithAnswers(db, userId, sessionId), findSnapshot(db, sessionId)]),
    );
    if (found === undefined) throw errors.sessionNotFound();
    const session = withProgress(found);
    return { session, questions: toSnapshot(snapshot, session.completedAt !== null) };
  });
}
