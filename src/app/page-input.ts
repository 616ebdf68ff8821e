import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from "../domain/session.js";
import { errors } from "./errors.js";

/**
 * A page request's `limit` (1..MAX_PAGE_SIZE, `defaultSize` when unset) and its cursor decoded
 * by `decode`; either one invalid is `invalid_argument`. One rule for every list the service
 * pages: sessions, quizzes, the due list.
 */
export function pageInput<C>(
  input: { limit?: number | undefined; cursor?: string | undefined },
  decode: (cursor: string) => C | undefined,
  defaultSize = DEFAULT_PAGE_SIZE,
): { limit: number; after: C | undefined } {
  const limit = input.limit ?? defaultSize;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE_SIZE) {
    throw errors.invalidArgument(`limit must be an integer from 1 to ${MAX_PAGE_SIZE}`);
  }
  if (!input.cursor) return { limit, after: undefined };
  const after = decode(input.cursor);
  if (after === undefined) {
    throw errors.invalidArgument("cursor is not a next_cursor this service returned");
  }
  return { limit, after };
}
