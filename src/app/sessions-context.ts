import type { Db } from "../db/database.js";
import type { ReadRouting } from "../db/read-routing.js";
import type { Clock } from "../domain/clock.js";
import type { RetryPolicy } from "./retry.js";

/** What the practice-session use cases share, injected once by `PracticeSessions`. */
export interface SessionsContext {
  db: Db;
  clock: Clock;
  /** Where ListSessions and GetSession read. */
  reads: ReadRouting;
  /** How writes that lost a race run again (in a call, within its budget: edge/call-limits.ts). */
  retry: RetryPolicy;
  newSessionId: () => string;
}
