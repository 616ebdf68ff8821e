import type { CallLimits } from "../app/call-limits.js";
import { REQUEST_HEAD_TIMEOUT_MS } from "../limits.js";

/**
 * A call's limits, in one place, from its deadline and the service's
 * settings. Each bounds one wait by what the call has left, so none outlives
 * the deadline's answer:
 * - its body: answered at the deadline while still arriving (api-calls.ts);
 *   any request is cut off once it has taken the longest a call may take
 *   (`requestReadLimitMs`, one-port.ts);
 * - the admission queue: a waiter waits until the deadline (its signal);
 * - a statement: stopped (`KILL QUERY`) when the deadline passes, its signal
 *   again, as is a SQLite statement waiting out another process's lock; the
 *   database's own caps (`databaseLimits`) only need to let the longest call through;
 * - retries of a write that lost a race: none starts, and no back-off ends,
 *   after half of what the call had left when its work began, so the last
 *   attempt still ends in time to answer `unavailable` rather than time out.
 */
export function callLimits(remainingMs: () => number): CallLimits {
  return { remainingMs, retryBudgetMs: () => Math.max(0, remainingMs() / 2) };
}

/** The service's settings a call's limits come from (config.ts). */
export interface LimitSettings {
  /** REQUEST_TIMEOUT_MS: the longest a call may take. */
  requestTimeoutMs: number;
}

/**
 * How long any request may take to arrive, head and body, before the
 * connection cuts it off (HTTP/1.1: 408; HTTP/2: the stream reset): its
 * head's time and then the longest a call may take, counted from the head
 * as a call's deadline is. So a slow body is answered at its call's own
 * deadline (504), never cut before it.
 */
export function requestReadLimitMs(settings: LimitSettings): number {
  return REQUEST_HEAD_TIMEOUT_MS + settings.requestTimeoutMs;
}

/** The database's own limits on every statement and session (`openDatabase`'s `limits`). */
export interface DatabaseLimits {
  /** A statement unanswered this long: its connection is dropped and the caller gets `unavailable`. */
  queryTimeoutMs: number;
  /** MySQL's `innodb_lock_wait_timeout`: a lock wait fails (errno 1205, retried) before `queryTimeoutMs`. */
  lockWaitSeconds: number;
  /** MySQL's `idle_transaction_timeout`: a session idle in a transaction (a client cut off) is killed. */
  idleTransactionSeconds: number;
  /** How long one SQLite statement waits out another process's lock, in back-off steps. */
  sqliteLockWaitMs: number;
}

/**
 * The database's own caps: a statement may take half the longest call, as
 * for retries, so that a database that stops answering is `unavailable` in
 * time to say so; never under OUTSIDE_CALLS_MS. Each call's statements are
 * stopped at its own deadline besides. A service allowing 60 s calls runs
 * statements past 5 s; one allowing 1 s runs none of a call's past 1 s.
 */
export function databaseLimits(settings: LimitSettings): DatabaseLimits {
  return statementLimits(Math.max(OUTSIDE_CALLS_MS, settings.requestTimeoutMs / 2));
}

/**
 * The session limits that follow from a statement cap of `queryTimeoutMs`: a
 * lock wait fails within half of it, a transaction left idle is killed after
 * twice it, so no connection holds locks for long.
 */
export function statementLimits(queryTimeoutMs: number): DatabaseLimits {
  return {
    queryTimeoutMs,
    lockWaitSeconds: Math.max(1, Math.floor(queryTimeoutMs / 2000)),
    idleTransactionSeconds: 2 * Math.max(1, Math.ceil(queryTimeoutMs / 1000)),
    sqliteLockWaitMs: SQLITE_LOCK_WAIT_MS,
  };
}

/** What statements outside any call (migrations, the outbox relay, metrics) may always take. */
const OUTSIDE_CALLS_MS = 5000;

/**
 * A SQLite statement waits this long at most for another process's lock, and
 * never past its call's deadline (its signal); then `unavailable`, retried
 * within the call's retry budget.
 */
const SQLITE_LOCK_WAIT_MS = 1000;
