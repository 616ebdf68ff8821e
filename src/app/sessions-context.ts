import type { Db } from "../db/database.js";
import type { ReadRouting } from "../db/read-routing.js";
import type { Clock } from "../domain/clock.js";
import type { RetryPolicy } from "./retry.js";

/**
 * What the practice-session use cases share, injected once by
 * `PracticeSessions` (practice-sessions.ts): the store, the clock, where
 * reads go, how lost races are retried, and how session ids are made.
 */
export interface SessionsContext {
  db: Db;
  clock: Clock;
  /** Where ListSessions and GetSession read. */
  reads: ReadRouting;
  /** How writes that lost a race run again (budget: the request's deadline). */
  retry: RetryPolicy;
  newSessionId: () => string;
}
