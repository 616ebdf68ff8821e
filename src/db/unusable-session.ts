/**
 * A server setting the service cannot work with, found while readying a connection (sql_mode,
 * character set): the connection is refused, and at start-up the start, with `reason` as one
 * line naming the setting and what to change (ops/startup-errors.ts adds which database).
 */
export class UnusableSession extends Error {
  override name = "UnusableSession";

  constructor(readonly reason: string) {
    super(`the database ${reason}`);
  }
}

/** The UnusableSession in `err`'s cause chain, if any. */
export function unusableSessionIn(err: unknown): UnusableSession | undefined {
  let current: unknown = err;
  for (let depth = 0; depth < 5 && current instanceof Error; depth++) {
    if (current instanceof UnusableSession) return current;
    current = current.cause;
  }
  return undefined;
}
