import { listLiveQuizzes, type QuizListRow } from "../db/quiz-list-repository.js";
import type { ReadRouting } from "../db/read-routing.js";
import type { Clock } from "../domain/clock.js";
import { isDatabaseId, MAX_PAGE_SIZE, staleCutoff } from "../domain/session.js";
import { errors } from "./errors.js";
import { toServiceError } from "./service-errors.js";

/** Quizzes per page when the caller does not say. */
export const DEFAULT_QUIZ_PAGE_SIZE = 50;

export interface QuizPage {
  quizzes: QuizListRow[];
  /** The id of the last quiz when there are more; null on the last page. */
  nextCursor: string | null;
  hasMore: boolean;
}

/**
 * ListQuizzes: a page of the live quizzes by id, with the caller's sessions in
 * progress and questions due for review on each; the cursor is the previous
 * page's last id.
 */
export async function listQuizzes(
  reads: ReadRouting,
  clock: Clock,
  userId: string,
  input: { limit?: number | undefined; cursor?: string | undefined },
): Promise<QuizPage> {
  const limit = input.limit ?? DEFAULT_QUIZ_PAGE_SIZE;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE_SIZE) {
    throw errors.invalidArgument(`limit must be an integer from 1 to ${MAX_PAGE_SIZE}`);
  }
  const cursor = input.cursor ? input.cursor : undefined;
  if (cursor !== undefined && !isDatabaseId(cursor)) {
    throw errors.invalidArgument("cursor is not a next_cursor this service returned");
  }
  const now = clock.now();
  let quizzes: QuizListRow[];
  try {
    quizzes = await reads.read((db) =>
      listLiveQuizzes(db, {
        userId,
        staleCutoff: staleCutoff(now),
        now,
        after: cursor,
        limit: limit + 1,
      }),
    );
  } catch (err) {
    throw toServiceError(err);
  }
  const hasMore = quizzes.length > limit;
  if (hasMore) quizzes.length = limit;
  return { quizzes, nextCursor: hasMore ? (quizzes.at(-1)?.id ?? null) : null, hasMore };
}
