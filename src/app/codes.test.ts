import { Code } from "@connectrpc/connect";
import { codeToHttpStatus, codeToString } from "@connectrpc/connect/protocol-connect";
import { describe, expect, it } from "vitest";
import {
  CODE_MEANINGS,
  codeHttpStatus,
  codeName,
  HTTP_REFUSALS,
  meaningOf,
  meaningOfAnswer,
  meaningOfName,
  meaningOfStatus,
} from "./codes.js";

const codeNameOfStatus = (status: number) => meaningOfStatus(status)?.name;

describe("the table of codes", () => {
  const codes = Object.values(Code).filter((c): c is Code => typeof c === "number");

  it("has every Connect code with the name and HTTP status connect-es gives it, and gRPC's number", () => {
    expect(codes).toHaveLength(16);
    for (const code of codes) {
      expect([code, codeName(code), codeHttpStatus(code), meaningOf(code).grpcStatus]).toEqual([
        code,
        codeToString(code),
        codeToHttpStatus(code),
        code,
      ]);
    }
    expect(meaningOfName("ok")).toMatchObject({ httpStatus: 200, grpcStatus: 0 });
    expect(new Set(CODE_MEANINGS.map((m) => m.name)).size).toBe(17);
  });

  it("tells callers refused for load, and only them, to retry after a second", () => {
    const told = CODE_MEANINGS.filter((m) => m.retryAfterSeconds !== undefined);
    expect(told.map((m) => [m.name, m.retryAfterSeconds])).toEqual([
      ["resource_exhausted", 1],
      ["unavailable", 1],
    ]);
  });

  it("counts as the server's fault the gRPC conventions' list, never a caller's mistake", () => {
    expect(CODE_MEANINGS.filter((m) => m.serverFault).map((m) => m.name)).toEqual([
      "unknown",
      "deadline_exceeded",
      "unimplemented",
      "internal",
      "unavailable",
      "data_loss",
    ]);
  });

  it("reads a bare HTTP status as its general code, and HTTP's own refusals as theirs", () => {
    expect(
      [400, 401, 404, 408, 409, 413, 415, 429, 431, 500, 503, 504].map(codeNameOfStatus),
    ).toEqual([
      "invalid_argument",
      "unauthenticated",
      "not_found",
      "deadline_exceeded",
      "already_exists",
      "resource_exhausted",
      "unimplemented",
      "resource_exhausted",
      "resource_exhausted",
      "internal",
      "unavailable",
      "deadline_exceeded",
    ]);
    // Every code a bare status stands for reads back as that status (HTTP's own aside).
    for (const status of [400, 401, 403, 404, 409, 429, 499, 500, 501, 503, 504]) {
      expect(meaningOfName(codeNameOfStatus(status) ?? "").httpStatus).toBe(status);
    }
  });

  it("says whose fault each code is: the caller's, load's or ours", () => {
    const by = (fault: string) => CODE_MEANINGS.filter((m) => m.fault === fault).map((m) => m.name);
    expect(by("none")).toEqual(["ok"]);
    expect(by("load")).toEqual(["deadline_exceeded", "resource_exhausted", "unavailable"]);
    expect(by("ours")).toEqual(["unknown", "internal", "data_loss"]);
  });

  it("keeps HTTP's own refusals apart: their status, the code's gRPC number, the caller's fault, no Retry-After", () => {
    expect(
      Object.values(HTTP_REFUSALS).map((m) => [m.httpStatus, m.name, m.grpcStatus, m.title]),
    ).toEqual([
      [405, "unimplemented", 12, "Method Not Allowed"],
      [408, "deadline_exceeded", 4, "Request Timeout"],
      [413, "resource_exhausted", 8, "Content Too Large"],
      [415, "unimplemented", 12, "Unsupported Media Type"],
      [431, "resource_exhausted", 8, "Request Header Fields Too Large"],
    ]);
    for (const refusal of Object.values(HTTP_REFUSALS)) {
      expect(refusal).toMatchObject({ fault: "caller", serverFault: false });
      expect(refusal.retryAfterSeconds).toBeUndefined();
      expect(meaningOfAnswer(refusal.name, refusal.httpStatus)).toBe(refusal);
    }
    // The code at its own status is the code's row: a 429 says Retry-After, a 413 does not.
    expect(meaningOfAnswer("resource_exhausted", 429).retryAfterSeconds).toBe(1);
    expect(meaningOfAnswer("resource_exhausted", 413).retryAfterSeconds).toBeUndefined();
  });
});
