import { listLiveQuizzes, type QuizListRow } from "../db/quiz-list-repository.js";
import type { ReadRouting } from "../db/read-routing.js";
import type { Clock } from "../domain/clock.js";
import { isDatabaseId, staleCutoff } from "../domain/session.js";
import { pageInput } from "./page-input.js";
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
  const { limit, after: cursor } = pageInput(
    input,
    (c) => (isDatabaseId(c) ? c : undefined),
    DEFAULT_QUIZ_PAGE_SIZE,
  );
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
