import { describe, expect, it } from "vitest";
import { isDatabaseUnavailable, isTransientConflict } from "./errors.js";

/** The shape mysql2 gives a server error. */
function serverError(errno: number, code: string, sqlMessage: string) {
  return Object.assign(new Error(sqlMessage), { errno, code, sqlMessage, fatal: false });
}

type Is = { unavailable: boolean; conflict: boolean };
const unavailable: Is = { unavailable: true, conflict: false };
const neither: Is = { unavailable: false, conflict: false };

/**
 * Server errors and what they are: the database unavailable (not retried), a
 * conflict to run again (unavailable once retries are spent), or neither.
 */
const cases: [what: string, errno: number, code: string, message: string, is: Is][] = [
  [
    "a Galera node outside the primary component",
    1047,
    "ER_UNKNOWN_COM_ERROR",
    "WSREP has not yet prepared node for application use",
    unavailable,
  ],
  ["a killed connection", 1927, "ER_CONNECTION_KILLED", "x", unavailable],
  ["a shutdown", 1053, "ER_SERVER_SHUTDOWN", "x", unavailable],
  ["a read-only server", 1290, "ER_OPTION_PREVENTS_STATEMENT", "x", unavailable],
  ["a statement timeout", 1969, "ER_STATEMENT_TIMEOUT", "x", unavailable],
  [
    "a certification failure",
    1213,
    "ER_LOCK_DEADLOCK",
    "Deadlock found when trying to get lock; try restarting transaction",
    { unavailable: true, conflict: true },
  ],
  ["a duplicate key", 1062, "ER_DUP_ENTRY", "Duplicate entry 'x' for key 'PRIMARY'", neither],
  ["a bad statement", 1064, "ER_PARSE_ERROR", "You have an error in your SQL syntax", neither],
];

describe("database errors on a cluster", () => {
  it.each(cases)("%s (%i %s)", (_what, errno, code, message, is) => {
    const err = serverError(errno, code, message);
    expect({ unavailable: isDatabaseUnavailable(err), conflict: isTransientConflict(err) }).toEqual(
      is,
    );
  });
});
