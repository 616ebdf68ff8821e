import { AsyncLocalStorage } from "node:async_hooks";

/**
 * The signal of the call whose statements run now: a use case runs its
 * database work inside `cancellable(signal, ...)`, and the drivers
 * (connect.ts, sqlite.ts) stop its statements when it aborts, as Go's
 * database/sql does with a request's context. Carried by async context so
 * that repositories keep their plain `(db, ...)` signatures.
 */
const running = new AsyncLocalStorage<AbortSignal>();

/** Runs `work` with its statements stopped when `signal` aborts (none: never stopped). */
export function cancellable<T>(
  signal: AbortSignal | undefined,
  work: () => Promise<T>,
): Promise<T> {
  if (signal === undefined) return work();
  if (signal.aborted) return Promise.reject(signal.reason);
  return running.run(signal, work);
}

/** The signal of the statements running now, if any. */
export function statementSignal(): AbortSignal | undefined {
  return running.getStore();
}

/**
 * Whether a statement must run even for a call that has been stopped: the
 * end of its transaction, so that the connection goes back clean.
 */
export function endsTransaction(sql: string): boolean {
  return /^\s*rollback\b/i.test(sql);
}
