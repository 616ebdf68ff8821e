import { ViolationsSchema } from "@bufbuild/protovalidate/gen/buf/validate/validate_pb.js";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import {
  PracticeSessionService,
  type SessionMode,
  type SessionStatus,
} from "../../gen/practice/v1/practice_session_service_pb.js";
import { insertQuiz } from "../support/fixtures.js";
import { fileService } from "../support/in-process.js";
import { injectTransport } from "../support/inject-transport.js";

/**
 * A request with several mistakes gets one invalid_argument naming each (RPC: a
 * buf.validate.Violations detail; REST: problem+json `errors`, `detail` the first), and the
 * message for each mistake is the one the API has always given.
 */

const svc = await fileService();
const quiz = await insertQuiz(svc.db);
const json = { "content-type": "application/json" };

interface Named {
  field: string;
  rule: string;
  message: string;
}

/** The violations of an RPC refusal, as field, rule and message. */
function violations(err: ConnectError): Named[] {
  return (err.findDetails(ViolationsSchema)[0]?.violations ?? []).map((v) => ({
    field: v.field?.elements.map((e) => e.fieldName).join(".") ?? "",
    rule: v.ruleId,
    message: v.message,
  }));
}

const ANSWER = "user_answer must be 1 to 1000 characters and not only white space";

describe("three mistakes in one SubmitAnswer", () => {
  it.each(["connect", "grpc", "grpc-web"] as const)(
    "over %s: one invalid_argument naming session_id, question_id and user_answer",
    async (protocol) => {
      const client = createClient(PracticeSessionService, injectTransport(svc.app, protocol));
      const err = ConnectError.from(
        await client
          .submitAnswer(
            { sessionId: "", questionId: "", userAnswer: "x".repeat(1001) },
            { headers: await svc.auth("three") },
          )
          .catch((e: unknown) => e),
      );
      expect(err.code).toBe(Code.InvalidArgument);
      expect(err.rawMessage).toBe("session_id is required");
      expect(violations(err)).toEqual([
        { field: "session_id", rule: "required", message: "session_id is required" },
        { field: "question_id", rule: "required", message: "question_id is required" },
        { field: "user_answer", rule: "string.max_len", message: ANSWER },
      ]);
    },
  );

  it("over REST: 400 with each in errors, detail the first", async () => {
    const res = await svc.rest("three", "POST", `/sessions/${"s".repeat(65)}/answers`, {
      headers: json,
      body: JSON.stringify({ question_id: "", user_answer: "x".repeat(1001) }),
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      type: "about:blank",
      title: "Bad Request",
      status: 400,
      code: "invalid_argument",
      detail: "id must be at most 64 characters",
      errors: [
        { field: "id", message: "id must be at most 64 characters" },
        { field: "question_id", message: "question_id is required" },
        { field: "user_answer", message: ANSWER },
      ],
    });
  });
});

describe("REST query parameters", () => {
  it("reports every bad parameter at once, in the request's order; detail is the first", async () => {
    const cursor = "c".repeat(129);
    const res = await svc.rest(
      "query",
      "GET",
      `/quizzes/${quiz.quizId}/sessions?limit=500&status=foo&cursor=${cursor}`,
    );
    expect(res.status).toBe(400);
    const body = (await res.json()) as { detail: string; errors: unknown[] };
    expect(body.detail).toBe('status must be "active" or "completed"');
    expect(body.errors).toEqual([
      { field: "status", message: 'status must be "active" or "completed"' },
      { field: "limit", message: "limit must be an integer from 1 to 100" },
      { field: "cursor", message: "cursor is not a next_cursor this service returned" },
    ]);
  });

  it.each([
    ["limit=0", "limit", "limit must be an integer from 1 to 100"],
    ["limit=abc", "limit", "limit must be an integer from 1 to 100"],
    ["limit=5&limit=6", "limit", "limit must be given at most once"],
    ["status=ACTIVE", "status", 'status must be "active" or "completed"'],
  ])("?%s: names %s with the message it always had", async (query, field, message) => {
    const res = await svc.rest("query", "GET", `/quizzes/${quiz.quizId}/sessions?${query}`);
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ detail: message, errors: [{ field, message }] });
  });

  it("leaves alone parameters the operation does not have (a cache buster, say)", async () => {
    const res = await svc.rest("query", "GET", `/quizzes/${quiz.quizId}/sessions?_=12345`);
    expect(res.status).toBe(200);
  });
});

describe("REST bodies", () => {
  it.each([
    ["questionId", "unknown field questionId: did you mean question_id?"],
    ["user-answer", "unknown field user-answer: did you mean user_answer?"],
    ["qestion_id", "unknown field qestion_id: did you mean question_id?"],
    ["is_correct", "unknown field is_correct"],
  ])(
    "a field the operation does not have (%s) is named, with the one meant",
    async (name, message) => {
      const res = await svc.rest(
        "body",
        "POST",
        "/sessions/01900000-0000-7000-8000-000000000000/answers",
        {
          headers: json,
          body: JSON.stringify({ question_id: "1", user_answer: "Paris", [name]: "x" }),
        },
      );
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({
        detail: message,
        errors: [{ field: name, message }],
      });
    },
  );

  it("names the missing field and the unknown one sent instead, in that order", async () => {
    const res = await svc.rest("body", "POST", `/quizzes/${quiz.quizId}/sessions`, {
      headers: json,
      body: JSON.stringify({ Mode: "review", mode: "everything" }),
    });
    expect(await res.json()).toMatchObject({
      status: 400,
      detail: 'mode must be "full", "review" or "missed"',
      errors: [
        { field: "mode", message: 'mode must be "full", "review" or "missed"' },
        { field: "Mode", message: "unknown field Mode: did you mean mode?" },
      ],
    });
  });

  it("refuses any field on a completion, which takes none", async () => {
    const res = await svc.rest(
      "body",
      "POST",
      "/sessions/01900000-0000-7000-8000-000000000000/complete",
      {
        headers: json,
        body: '{"force":true}',
      },
    );
    expect(await res.json()).toMatchObject({ status: 400, errors: [{ field: "force" }] });
  });

  it("keeps a body that is no JSON object one whole refusal, without errors", async () => {
    const res = await svc.rest("body", "POST", `/quizzes/${quiz.quizId}/sessions`, {
      headers: json,
      body: "[]",
    });
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      status: 400,
      detail: "request body must be empty or a JSON object",
    });
    expect(body.errors).toBeUndefined();
  });
});

describe("the messages of each mistake, on RPC", () => {
  const headers = async () => ({ headers: await svc.auth("rpc") });
  const refusal = async (call: Promise<unknown>) => ConnectError.from(await call.catch((e) => e));

  it("a page size out of range, an unknown status and an unknown mode", async () => {
    const limit = await refusal(
      svc.rpc.listSessions({ quizId: quiz.quizId, limit: 500 }, await headers()),
    );
    expect(limit.rawMessage).toBe("limit must be an integer from 1 to 100");
    const status = await refusal(
      svc.rpc.listSessions({ quizId: quiz.quizId, status: 7 as SessionStatus }, await headers()),
    );
    expect(status.rawMessage).toBe("unknown status 7");
    const mode = await refusal(
      svc.rpc.startSession({ quizId: quiz.quizId, mode: 9 as SessionMode }, await headers()),
    );
    expect(mode.rawMessage).toBe("unknown mode 9");
    expect(violations(mode)).toEqual([
      { field: "mode", rule: "enum.defined_only", message: "unknown mode 9" },
    ]);
  });

  it("a use case's refusal of a field carries the same detail: a cursor it did not make", async () => {
    const err = await refusal(
      svc.rpc.listSessions({ quizId: quiz.quizId, cursor: "nope" }, await headers()),
    );
    expect(err.code).toBe(Code.InvalidArgument);
    expect(violations(err)).toEqual([
      {
        field: "cursor",
        rule: "cursor.issued",
        message: "cursor is not a next_cursor this service returned",
      },
    ]);
  });

  it("an id of any form within its length still names nothing: not_found, not invalid_argument", async () => {
    for (const quizId of ["abc", "0", "9".repeat(64), "💥"]) {
      const err = await refusal(svc.rpc.listSessions({ quizId }, await headers()));
      expect(err.code, quizId).toBe(Code.NotFound);
    }
    for (const sessionId of ["not-a-uuid", "s".repeat(64)]) {
      const err = await refusal(svc.rpc.getSession({ sessionId }, await headers()));
      expect(err.code, sessionId).toBe(Code.NotFound);
    }
  });
});
