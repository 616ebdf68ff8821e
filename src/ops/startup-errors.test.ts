import { describe, expect, it } from "vitest";
import { databaseMayHeal } from "./startup-errors.js";

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
