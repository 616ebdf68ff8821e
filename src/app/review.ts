import type { Db } from "../db/database.js";
import {
  countMemory,
  findDueMemory,
  findMemoryDueAt,
  findNextDueAt,
  findQuizQuestionIds,
  type MemoryRow,
} from "../db/question-memory-repository.js";
import { type DueCursor, decodeDueCursor, encodeDueCursor } from "../domain/cursor.js";
import type { DueQuestion, DueQuestions } from "../domain/memory.js";
import { isDatabaseId } from "../domain/session.js";
import { errors } from "./errors.js";
import { pageInput } from "./page-input.js";
import { guard } from "./service-errors.js";
import type { SessionsContext } from "./sessions-context.js";

/** A page of the due list, as a transport asks for it. */
export interface DuePageInput {
  /** 1..100 (the request's rule); undefined for DEFAULT_PAGE_SIZE. */
  limit?: number;
  /** A next_cursor from a previous page; undefined or "" for the first page. */
  cursor?: string;
}

/** A page of the due list, with the cursor of the next one (undefined on the last). */
export type DuePage = DueQuestions & { nextCursor: string | undefined };

/**
 * ListDueQuestions: a page of the caller's questions of a live quiz due for
 * review now, earliest due first, then in the quiz's order; how many are due
 * and how many live questions they never answered, of the whole quiz; and
 * when the next one falls due. Only the caller's own memory.
 */
export async function listDueQuestions(
  { reads, clock }: SessionsContext,
  userId: string,
  quizId: string,
  input: DuePageInput = {},
): Promise<DuePage> {
  const { limit, after } = pageInput(input, decodeDueCursor);
  if (!isDatabaseId(quizId)) throw errors.quizNotFound();
  const now = clock.now();
  const due = await guard(() =>
    reads.read((db) => findDueQuestions(db, userId, quizId, now, limit, after)),
  );
  if (due === undefined) throw errors.quizNotFound();
  return { ...due, nextCursor: due.next && encodeDueCursor(due.next) };
}

/**
 * Up to `limit` questions due at `now` on a quiz for a learner, after
 * `after`, or undefined if the quiz is not live: earliest due first, then in
 * the quiz's order (GetQuiz's positions, the quiz's order now). A page reads
 * its rows from the cursor's due time on, each tie of due time whole (the
 * questions missed together, at most the quiz's), and counts the rest on
 * indexes: its cost does not grow with the number due.
 */
export async function findDueQuestions(
  db: Db,
  userId: string,
  quizId: string,
  now: Date,
  limit: number,
  after?: DueCursor,
): Promise<DueQuestions | undefined> {
  const [order, counts, rest, tiedWithCursor, nextDueAt] = await Promise.all([
    findQuizQuestionIds(db, quizId),
    countMemory(db, userId, quizId, now),
    findDueMemory(db, userId, quizId, now, { take: limit + 1, afterDueAt: after?.dueAt }),
    after ? findMemoryDueAt(db, userId, quizId, after.dueAt) : [],
    findNextDueAt(db, userId, quizId, now),
  ]);
  if (order === undefined) return undefined;
  const places = new Map(order.map((id, i) => [id, i + 1]));
  // The range ends inside a tie, perhaps: the whole of its last due time is read.
  const last = rest.length > limit ? rest.at(-1) : undefined;
  const lastTie = last ? await findMemoryDueAt(db, userId, quizId, last.dueAt) : [];
  const ranked = (rows: MemoryRow[]) =>
    // Memory of a question no longer in the quiz has no place: left out.
    rows.flatMap((m): DueQuestion[] => {
      const position = places.get(m.questionId);
      return position === undefined ? [] : [{ ...m, position }];
    });
  const cursorPlace = after ? (places.get(after.questionId) ?? 0) : 0;
  const candidates = [
    ...ranked(tiedWithCursor).filter((q) => q.position > cursorPlace),
    ...ranked(last ? [...rest.filter((m) => m.dueAt < last.dueAt), ...lastTie] : rest),
  ].sort((a, b) => a.dueAt.getTime() - b.dueAt.getTime() || a.position - b.position);
  const questions = candidates.slice(0, limit);
  const end = questions.at(-1);
  return {
    questions,
    dueCount: counts.due,
    newCount: Math.max(0, order.length - counts.remembered),
    nextDueAt,
    // Rows past the last tie are not read: more may follow it.
    next:
      (candidates.length > limit || last !== undefined) && end
        ? { dueAt: end.dueAt, questionId: end.questionId }
        : undefined,
  };
}
