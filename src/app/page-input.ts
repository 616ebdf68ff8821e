import { DEFAULT_PAGE_SIZE } from "../domain/session.js";
import { errors } from "./errors.js";

/**
 * A page request's `limit` (`defaultSize` when unset; its range is the request's rule, checked
 * before the use case runs) and its cursor decoded by `decode`; a cursor it cannot read is
 * `invalid_argument`. One rule for every list the service pages: sessions, quizzes, the due list.
 */
export function pageInput<C>(
  input: { limit?: number | undefined; cursor?: string | undefined },
  decode: (cursor: string) => C | undefined,
  defaultSize = DEFAULT_PAGE_SIZE,
): { limit: number; after: C | undefined } {
  const limit = input.limit ?? defaultSize;
  if (!input.cursor) return { limit, after: undefined };
  const after = decode(input.cursor);
  if (after === undefined) throw errors.invalidCursor();
  return { limit, after };
}
