import { ConnectError } from "@connectrpc/connect";
import { LogBudget } from "./log-budget.js";

/** Warnings about shed load and client errors written per second at most (with a burst of as many). */
const WARNINGS_PER_SECOND = 10;

/** HTTP statuses that say "too much load" or "too slow", not a fault in our code. */
const LOAD_STATUSES = new Set([429, 503, 504]);

/** Logs one failed request answered with HTTP `status` (see `failureLog`). */
export type LogFailure = (log: FailureLogger, err: unknown, status: number) => void;

/** What it needs of a logger (pino's, or a Fastify request's). */
export interface FailureLogger {
  warn(fields: object, msg: string): void;
  error(fields: object, msg: string): void;
}

/**
 * A logger of failed requests. Errors of ours (500 and the like) go at
 * error level with their stack. Shed load (503), timeouts (504) and client
 * errors go at warn, one short line without a stack, at most
 * WARNINGS_PER_SECOND a second for all requests it logs: a flood of cheap
 * bad or shed requests must not buy kilobytes of log each. The next line
 * written says how many were left out (`suppressed`).
 */
export function failureLog(): LogFailure {
  const budget = new LogBudget(WARNINGS_PER_SECOND);
  return (log, err, status) => {
    if (status >= 500 && !LOAD_STATUSES.has(status)) {
      log.error({ err }, "request failed");
      return;
    }
    const suppressed = budget.take();
    if (suppressed === undefined) return;
    const connectErr = err instanceof ConnectError ? err : undefined;
    const cause = connectErr?.cause instanceof Error ? connectErr.cause.message : undefined;
    const reason = connectErr?.rawMessage ?? (err instanceof Error ? err.message : String(err));
    log.warn({ status, reason, cause, suppressed }, "request failed");
  };
}
