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
 *   again; the database's own caps (`databaseLimits`) only need to let the
 *   longest call through;
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

/**
 * The database pool's own statement cap (`openDatabase`'s `queryTimeoutMs`,
 * from which the server-side statement time, lock wait and idle transaction
 * limits follow): half the longest call, as for retries, so that a database
 * that stops answering is `unavailable` in time to say so; never under
 * OUTSIDE_CALLS_MS. Each call's statements are stopped at its own deadline
 * besides. A service allowing 60 s calls runs statements past 5 s; one
 * allowing 1 s runs none of a call's past 1 s.
 */
export function databaseLimits(settings: LimitSettings): { queryTimeoutMs: number } {
  return { queryTimeoutMs: Math.max(OUTSIDE_CALLS_MS, settings.requestTimeoutMs / 2) };
}

/** What statements outside any call (migrations, the outbox relay, metrics) may always take. */
const OUTSIDE_CALLS_MS = 5000;
