import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { requireWellFormed } from "./well-formed.js";

describe("requireWellFormed", () => {
  it("takes text with paired surrogates, and no text", () => {
    expect(() => requireWellFormed({ a: "😀 café", b: undefined, c: "" })).not.toThrow();
  });

  it.each([["\ud800"], ["x\udc00"], ["\udc00\ud800"], ["😀\ud83d"]])(
    "refuses a lone surrogate (%j) with invalid_argument naming the field",
    (text) => {
      let err: unknown;
      try {
        requireWellFormed({ ok: "fine", user_answer: text });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ConnectError);
      expect((err as ConnectError).code).toBe(Code.InvalidArgument);
      expect((err as ConnectError).rawMessage).toBe("user_answer is not well-formed Unicode");
    },
  );
});
