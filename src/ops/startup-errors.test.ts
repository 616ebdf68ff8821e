import { describe, expect, it } from "vitest";
import { UnusableSession } from "../db/unusable-session.js";
import { databaseFailure, databaseMayHeal, startupLine } from "./startup-errors.js";

describe("which database failures at start-up are worth waiting for", () => {
  it.each([
    ["a refused connection (the server is starting)", { code: "ECONNREFUSED" }],
    ["a connect timeout", { code: "ETIMEDOUT" }],
    ["a name lookup that failed for now", { code: "EAI_AGAIN" }],
    ["too many connections", { code: "ER_CON_COUNT_ERROR", errno: 1040 }],
    ["a Galera node still joining", { code: "ER_UNKNOWN_COM_ERROR", errno: 1047 }],
    [
      "one wrapped in a migration's error",
      new Error("migration x failed", { cause: { code: "ECONNRESET" } }),
    ],
  ])("waits for %s", (_name, err) => {
    expect(databaseMayHeal(err)).toBe(true);
  });

  it.each([
    ["a refused login", { code: "ER_ACCESS_DENIED_ERROR", errno: 1045 }],
    ["an unknown host", { code: "ENOTFOUND" }],
    ["a missing right", { code: "ER_DBACCESS_DENIED_ERROR", errno: 1044 }],
    ["a bug", new TypeError("x is undefined")],
  ])("gives up at once on %s", (_name, err) => {
    expect(databaseMayHeal(err)).toBe(false);
  });
});

describe("a server whose sessions the service cannot use", () => {
  const url = "mysql://svc:secret@db.example:3306/practice";
  const refused = new UnusableSession("keeps sessions at character_set_results utf8mb3 (…)");

  it("is named in one line with the database, also when wrapped (a migration's failure)", () => {
    const line =
      "the database MySQL db.example:3306/practice keeps sessions at character_set_results utf8mb3 (…)";
    expect(databaseFailure(refused, url)).toBe(line);
    const wrapped = new Error("migration (setup) failed", {
      cause: new Error("database session not ready", { cause: refused }),
    });
    expect(startupLine(wrapped, url)).toBe(line);
  });

  it("is final: no waiting", () => {
    expect(databaseMayHeal(refused)).toBe(false);
  });
});
