import { describe, expect, it } from "vitest";
import { isDatabaseUnavailable, isTransientConflict } from "./errors.js";

/** The shape mysql2 gives a server error. */
function serverError(errno: number, code: string, sqlMessage: string) {
  return Object.assign(new Error(sqlMessage), { errno, code, sqlMessage, fatal: false });
}

describe("database errors on a cluster", () => {
  it("a Galera node outside the primary component (1047) is unavailable, not retried", () => {
    const err = serverError(
      1047,
      "ER_UNKNOWN_COM_ERROR",
      "WSREP has not yet prepared node for application use",
    );
    expect(isDatabaseUnavailable(err)).toBe(true);
    expect(isTransientConflict(err)).toBe(false);
  });

  it("a killed connection, a shutdown, a read-only server and a statement timeout are unavailable", () => {
    for (const [errno, code] of [
      [1927, "ER_CONNECTION_KILLED"],
      [1053, "ER_SERVER_SHUTDOWN"],
      [1290, "ER_OPTION_PREVENTS_STATEMENT"],
      [1969, "ER_STATEMENT_TIMEOUT"],
    ] as const) {
      expect(isDatabaseUnavailable(serverError(errno, code, "x"))).toBe(true);
    }
  });

  it("a certification failure (1213) is a conflict to run again", () => {
    const err = serverError(
      1213,
      "ER_LOCK_DEADLOCK",
      "Deadlock found when trying to get lock; try restarting transaction",
    );
    expect(isTransientConflict(err)).toBe(true);
  });

  it("a duplicate key or a bad statement is neither", () => {
    for (const err of [
      serverError(1062, "ER_DUP_ENTRY", "Duplicate entry 'x' for key 'PRIMARY'"),
      serverError(1064, "ER_PARSE_ERROR", "You have an error in your SQL syntax"),
    ]) {
      expect(isDatabaseUnavailable(err)).toBe(false);
      expect(isTransientConflict(err)).toBe(false);
    }
  });
});
