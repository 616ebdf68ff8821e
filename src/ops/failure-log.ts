import { ConnectError } from "@connectrpc/connect";
import { errorCodes } from "fastify";
import { faultOfStatus } from "../app/codes.js";
import { meaningOfError } from "../app/errors.js";
import { LogBudget } from "./log-budget.js";

/** Warnings about shed load and client errors written per second at most (with a burst of as many). */
const WARNINGS_PER_SECOND = 10;

/** Logs one failed request answered with HTTP `status` (see `failureLog`). */
export type LogFailure = (log: FailureLogger, err: unknown, status: number) => void;

/** What it needs of a logger (pino's, or a Fastify request's). */
export interface FailureLogger {
  warn(fields: object, msg: string): void;
  error(fields: object, msg: string): void;
}

/**
 * A logger of failed requests. Faults of ours (the table of codes says
 * whose fault each is) go at error level with their stack. Load (shed,
 * a deadline) and the caller's doing go at warn, one short line without a stack, at most
 * WARNINGS_PER_SECOND a second for all requests it logs: a flood of cheap
 * bad or shed requests must not buy kilobytes of log each. The next line
 * written says how many were left out (`suppressed`).
 */
export function failureLog(): LogFailure {
  const budget = new LogBudget(WARNINGS_PER_SECOND);
  return (log, err, status) => {
    if (faultOf(err, status) === "ours") {
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

/** What Fastify writes when a handler fails after its reply was sent: an error line with a stack. */
const FAILED_AFTER_SENT = "Promise errored, but reply.sent = true was set";

/**
 * The app's logger (every request's child inherits it) on which Fastify's
 * lines about a second answer go at debug level: a call answered by the
 * edge (its deadline passed while its body still came, its client left)
 * whose handler then answers or fails too. The first answer is the call's,
 * with its request line; the second reaches nobody. A failure after the
 * answer that is a fault of ours (5xx other than a deadline or shed load)
 * stays an error.
 */
export function quietSecondAnswers<L extends FailureLogger & { debug(...args: unknown[]): void }>(
  child: L,
): L {
  const warn = child.warn;
  const error = child.error;
  child.warn = function (this: L, fields: object, ...rest: unknown[]) {
    // What Fastify writes when a reply is sent twice: a warn line with the error's stack.
    const err = (fields as { err?: unknown } | undefined)?.err;
    if (err instanceof errorCodes.FST_ERR_REP_ALREADY_SENT) return this.debug(fields, ...rest);
    return (warn as (...args: unknown[]) => void).call(this, fields, ...rest);
  } as L["warn"];
  child.error = function (this: L, fields: object, ...rest: unknown[]) {
    const err = (fields as { err?: unknown } | undefined)?.err;
    if (rest[0] === FAILED_AFTER_SENT && faultOf(err) !== "ours")
      return this.debug(fields, ...rest);
    return (error as (...args: unknown[]) => void).call(this, fields, ...rest);
  } as L["error"];
  return child;
}

/**
 * Whose fault a failure is, as the table of codes says: a ConnectError's
 * answer, else the HTTP status it was answered with or carries; an error
 * with neither is ours.
 */
function faultOf(err: unknown, status?: number) {
  if (err instanceof ConnectError) return meaningOfError(err).fault;
  const carried = status ?? (err as { statusCode?: number } | undefined)?.statusCode;
  return carried === undefined ? "ours" : faultOfStatus(carried);
}
