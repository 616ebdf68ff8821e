import { Code } from "@connectrpc/connect";
import { codeToHttpStatus, codeToString } from "@connectrpc/connect/protocol-connect";
import { describe, expect, it } from "vitest";
import { codeHttpStatus, codeName } from "./connect-codes.js";

describe("Connect codes", () => {
  const codes = Object.values(Code).filter((c): c is Code => typeof c === "number");

  it("have the names and HTTP statuses connect-es gives them", () => {
    expect(codes).toHaveLength(16);
    for (const code of codes) {
      expect([code, codeName(code), codeHttpStatus(code)]).toEqual([
        code,
        codeToString(code),
        codeToHttpStatus(code),
      ]);
    }
  });
});
