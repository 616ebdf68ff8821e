import { sql } from "kysely";
import type {
  OpenAPIObject,
  OperationObject,
  ReferenceObject,
  ResponseObject,
} from "openapi3-ts/oas31";
import { beforeAll, describe, expect, it } from "vitest";
import type { PageJson, SessionJson } from "../../src/rest/schemas.js";
import { testStore } from "../support/database.js";
import { insertAnswer, insertQuiz, insertSessions } from "../support/fixtures.js";
import {
  deref,
  esc,
  expectValid,
  type Method,
  operations,
  pointer,
  served,
  useServedDocument,
} from "../support/openapi-document.js";
import type { TestService } from "../support/service.js";

// Real responses of every documented status validate against the served document.
useServedDocument();
let svc: TestService;
let doc: OpenAPIObject;
beforeAll(() => {
  ({ svc, doc } = served());
});

describe("real responses match the documented ones", () => {
  /** (path template, method, status) triples seen, to check every documented response is. */
  const seen = new Set<string>();

  /** Checks a response against the document: status, media type, body schema, headers. */
  async function check<T = unknown>(res: Response, path: string, method: Method): Promise<T> {
    const op = doc.paths?.[path]?.[method] as OperationObject;
    const status = String(res.status);
    const documented = op.responses?.[status] as ResponseObject | ReferenceObject | undefined;
    expect(documented, `${method} ${path}: ${status} is not documented`).toBeDefined();
    const [responsePtr, response] = deref(
      pointer("paths", path, method, "responses", status),
      documented,
    );
    const mediaType = (res.headers.get("content-type") ?? "").split(";")[0]?.trim() ?? "";
    expect(Object.keys(response.content as object)).toContain(mediaType);
    const body = await res.json();
    expectValid(
      `${responsePtr}/content/${esc(mediaType)}/schema`,
      body,
      `${method} ${path} ${status}`,
    );
    for (const [name, header] of Object.entries((response.headers ?? {}) as object)) {
      const [headerPtr, h] = deref(`${responsePtr}/headers/${esc(name)}`, header);
      const value = res.headers.get(name);
      if (h.required) expect(value, `${name} header of ${status}`).not.toBeNull();
      if (value !== null) expectValid(`${headerPtr}/schema`, value, `${name} header`);
    }
    seen.add(`${method} ${path} ${status}`);
    return body as T;
  }

  const QUIZZES = "/quizzes";
  const QUIZ = "/quizzes/{quiz_id}";
  const LIST = "/quizzes/{quiz_id}/sessions";
  const REVIEW = "/quizzes/{quiz_id}/review";
  const SESSION = "/sessions/{id}";
  const ANSWERS = "/sessions/{id}/answers";
  const COMPLETE = "/sessions/{id}/complete";

  it("list: 200 (empty, a full page with more, completed sessions), 400, 401, 404", async () => {
    const quiz = await insertQuiz(svc.db);
    const user = "openapi-lister";
    const path = `/quizzes/${quiz.quizId}/sessions`;
    await check(await svc.rest(user, "GET", path), LIST, "get");

    const base = Date.now() - 3_600_000;
    await insertSessions(
      svc.db,
      [0, 1, 2].map((i) => ({
        id: `0199f3c2-5b1e-7c3a-9d4e-00000000000${i}`,
        userId: user,
        quizId: quiz.quizId,
        startedAt: new Date(base + i * 1000),
        completedAt: i < 2 ? new Date(base + i * 1000 + 500) : null,
        totalQuestions: 3,
        correctAnswers: i,
      })),
    );
    const first = await check<PageJson>(
      await svc.rest(user, "GET", `${path}?limit=2`),
      LIST,
      "get",
    );
    expect(first).toMatchObject({ has_more: true, next_cursor: expect.any(String) });
    const last = await check<PageJson>(
      await svc.rest(user, "GET", `/api${path}?limit=2&cursor=${first.next_cursor}`),
      LIST,
      "get",
    );
    expect(last).toMatchObject({ has_more: false, next_cursor: null });
    expect(last.sessions[0]?.score_percentage).toBe(0);

    for (const query of ["limit=0", "limit=abc", "status=done", "cursor=nope", "limit=1&limit=2"]) {
      const res = await svc.rest(user, "GET", `${path}?${query}`);
      expect(res.status, query).toBe(400);
      await check(res, LIST, "get");
    }
    await check(await svc.rest(null, "GET", path), LIST, "get");
    await check(
      await svc.rest(user, "GET", path, { headers: { authorization: "Bearer not-a-jwt" } }),
      LIST,
      "get",
    );
    await check(await svc.rest(user, "GET", "/quizzes/999999/sessions"), LIST, "get");
    await check(await svc.rest(user, "GET", "/api/quizzes/abc/sessions"), LIST, "get");
  });

  it("get quiz: 200, 401, 404", async () => {
    const quiz = await insertQuiz(svc.db, { questions: 2 });
    const user = "openapi-reader";
    await check(await svc.rest(user, "GET", `/quizzes/${quiz.quizId}`), QUIZ, "get");
    await check(await svc.rest(user, "GET", `/api/quizzes/${quiz.quizId}`), QUIZ, "get");
    await check(await svc.rest(null, "GET", `/quizzes/${quiz.quizId}`), QUIZ, "get");
    await check(await svc.rest(user, "GET", "/quizzes/999999"), QUIZ, "get");
  });

  it("list quizzes: 200 (a page with more, the last page), 400, 401", async () => {
    await insertQuiz(svc.db, { questions: 1 });
    await insertQuiz(svc.db, { questions: 2 });
    const user = "openapi-catalog";
    const first = await check<{ next_cursor: string | null; has_more: boolean }>(
      await svc.rest(user, "GET", "/quizzes?limit=1"),
      QUIZZES,
      "get",
    );
    expect(first).toMatchObject({ has_more: true, next_cursor: expect.any(String) });
    await check(await svc.rest(user, "GET", "/api/quizzes"), QUIZZES, "get");
    for (const query of ["limit=0", "limit=abc", "cursor=nope", "limit=1&limit=2"]) {
      const res = await svc.rest(user, "GET", `/quizzes?${query}`);
      expect(res.status, query).toBe(400);
      await check(res, QUIZZES, "get");
    }
    await check(await svc.rest(null, "GET", "/quizzes"), QUIZZES, "get");
  });

  it("start: 201 with Location, 200 with answers, 400, 401, 404", async () => {
    const quiz = await insertQuiz(svc.db, { questions: 2 });
    const user = "openapi-starter";
    const path = `/quizzes/${quiz.quizId}/sessions`;
    const created = await svc.rest(user, "POST", path);
    expect(created.status).toBe(201);
    const session = await check<SessionJson>(created, LIST, "post");

    const [q1, q2] = quiz.questionIds as [string, string];
    const at = new Date();
    await insertAnswer(svc.db, {
      sessionId: session.id,
      questionId: q1,
      userAnswer: "A1",
      isCorrect: true,
      answeredAt: at,
    });
    await insertAnswer(svc.db, {
      sessionId: session.id,
      questionId: q2,
      userAnswer: "nope",
      isCorrect: false,
      answeredAt: new Date(at.getTime() + 1),
    });
    await sql`DELETE FROM questions WHERE id = ${q1}`.execute(svc.db);
    const resumed = await svc.rest(user, "POST", `/api${path}`, {
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expect(resumed.status).toBe(200);
    const body = await check<SessionJson>(resumed, LIST, "post");
    expect(body.answers.map((a) => a.question_id)).toEqual([null, q2]);

    const createdUnderApi = await svc.rest("openapi-other", "POST", `/api${path}`);
    expect(createdUnderApi.headers.get("location")).toMatch(/^\/api\/sessions\//);
    await check(createdUnderApi, LIST, "post");

    const empty = await insertQuiz(svc.db, { questions: 0 });
    await check(await svc.rest(user, "POST", `/quizzes/${empty.quizId}/sessions`), LIST, "post");
    const array = await svc.rest(user, "POST", path, {
      headers: { "content-type": "application/json" },
      body: "[]",
    });
    expect(array.status).toBe(400);
    await check(array, LIST, "post");
    await check(await svc.rest(null, "POST", path), LIST, "post");
    await check(await svc.rest(user, "POST", "/quizzes/999999/sessions"), LIST, "post");
    const text = { headers: { "content-type": "text/plain" }, body: "{}" };
    await check(await svc.rest(user, "POST", path, text), LIST, "post");
  });

  it("review: what is due (200, 401, 404); a review start (201, 400 with next_due_at)", async () => {
    const quiz = await insertQuiz(svc.db, { questions: 2 });
    const user = "openapi-reviewer";
    const json = { headers: { "content-type": "application/json" }, body: '{"mode":"review"}' };
    const path = `/quizzes/${quiz.quizId}/sessions`;
    const refused = await svc.rest(user, "POST", path, json);
    expect(refused.status).toBe(400);
    expect(await check(refused, LIST, "post")).toMatchObject({ next_due_at: null });
    const bad = { ...json, body: '{"mode":"later"}' };
    await check(await svc.rest(user, "POST", path, bad), LIST, "post");

    // One answered wrongly, the other left unanswered, an hour ago: both due now.
    const { id } = (await (await svc.rest(user, "POST", path)).json()) as SessionJson;
    await svc.rest(user, "POST", `/sessions/${id}/answers`, {
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ question_id: quiz.questionIds[0], user_answer: "no" }),
    });
    await svc.rest(user, "POST", `/sessions/${id}/complete`);
    await sql`UPDATE practice_question_memory SET due_at = ${new Date(Date.now() - 3_600_000)}
      WHERE user_id = ${user}`.execute(svc.db);
    const due = await check<{ due_count: number }>(
      await svc.rest(user, "GET", `/quizzes/${quiz.quizId}/review`),
      REVIEW,
      "get",
    );
    expect(due.due_count).toBe(2);
    await check(await svc.rest(null, "GET", `/quizzes/${quiz.quizId}/review`), REVIEW, "get");
    await check(
      await svc.rest(user, "GET", `/quizzes/${quiz.quizId}/review?limit=0`),
      REVIEW,
      "get",
    );
    await check(await svc.rest(user, "GET", "/api/quizzes/999999/review"), REVIEW, "get");
    const review = await svc.rest(user, "POST", path, json);
    expect(review.status).toBe(201);
    expect(await check(review, LIST, "post")).toMatchObject({ mode: "review", total_questions: 2 });
  });

  it("get, answer, complete: 200/201, 200 for a retry, 400, 401, 404, 409 with the stored answer", async () => {
    const quiz = await insertQuiz(svc.db, { questions: 2 });
    const [q1, q2] = quiz.questionIds as [string, string];
    const user = "openapi-answerer";
    const started = await svc.rest(user, "POST", `/quizzes/${quiz.quizId}/sessions`);
    const { id } = (await started.json()) as SessionJson;
    const json = (body: unknown): RequestInit => ({
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });

    // One answer by `who` (null: no token) to the session.
    const answer = (who: string | null, body: unknown) =>
      svc.rest(who, "POST", `/sessions/${id}/answers`, json(body));

    const answered = await answer(user, { question_id: q1, user_answer: "A1" });
    expect(answered.status).toBe(201);
    await check(answered, ANSWERS, "post");
    const again = await answer(user, { question_id: q1, user_answer: "A1" });
    expect(again.status).toBe(200);
    await check(again, ANSWERS, "post");
    const conflict = await answer(user, { question_id: q1, user_answer: "B1" });
    expect(conflict.status).toBe(409);
    const problem = await check<{ stored_answer: unknown }>(conflict, ANSWERS, "post");
    expect(problem.stored_answer).toMatchObject({ question_id: q1, user_answer: "A1" });
    await check(await answer(user, { question_id: q2, user_answer: " " }), ANSWERS, "post");
    await check(await answer(null, { question_id: q2, user_answer: "x" }), ANSWERS, "post");
    await check(
      await answer("someone-else", { question_id: q2, user_answer: "x" }),
      ANSWERS,
      "post",
    );

    const text = { headers: { "content-type": "text/plain" }, body: "{}" };
    await check(await svc.rest(user, "POST", `/sessions/${id}/answers`, text), ANSWERS, "post");
    await check(await svc.rest(user, "POST", `/sessions/${id}/complete`, text), COMPLETE, "post");
    await check(await svc.rest(user, "GET", `/api/sessions/${id}`), SESSION, "get");
    await check(await svc.rest(null, "GET", `/sessions/${id}`), SESSION, "get");
    await check(await svc.rest(user, "GET", "/sessions/nope"), SESSION, "get");

    const notObject = { headers: { "content-type": "application/json" }, body: "[]" };
    await check(
      await svc.rest(user, "POST", `/sessions/${id}/complete`, notObject),
      COMPLETE,
      "post",
    );
    await check(await svc.rest(user, "POST", `/sessions/${id}/complete`), COMPLETE, "post");
    const retried = await svc.rest(user, "POST", `/sessions/${id}/complete`);
    expect(retried.status).toBe(200);
    await check(retried, COMPLETE, "post");
    await check(await svc.rest(null, "POST", `/sessions/${id}/complete`), COMPLETE, "post");
    await check(
      await svc.rest("someone-else", "POST", `/sessions/${id}/complete`),
      COMPLETE,
      "post",
    );
  });

  it.skipIf(testStore() === "sqlite")(
    "every operation: 503 while the database is unreachable",
    async () => {
      const quiz = await insertQuiz(svc.db);
      const started = await svc.rest("openapi-outage", "POST", `/quizzes/${quiz.quizId}/sessions`);
      const { id } = (await started.json()) as SessionJson;
      await svc.proxy?.cut();
      try {
        for (const method of ["get", "post"] as const) {
          const res = await svc.rest("openapi-outage", method, `/quizzes/${quiz.quizId}/sessions`);
          expect(res.status).toBe(503);
          await check(res, LIST, method);
        }
        await check(await svc.rest("openapi-outage", "GET", `/sessions/${id}`), SESSION, "get");
        await check(
          await svc.rest("openapi-outage", "GET", `/quizzes/${quiz.quizId}`),
          QUIZ,
          "get",
        );
        await check(await svc.rest("openapi-outage", "GET", "/quizzes"), QUIZZES, "get");
        await check(
          await svc.rest("openapi-outage", "GET", `/quizzes/${quiz.quizId}/review`),
          REVIEW,
          "get",
        );
        await check(
          await svc.rest("openapi-outage", "POST", `/sessions/${id}/answers`, {
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ question_id: quiz.questionIds[0], user_answer: "A1" }),
          }),
          ANSWERS,
          "post",
        );
        await check(
          await svc.rest("openapi-outage", "POST", `/sessions/${id}/complete`),
          COMPLETE,
          "post",
        );
      } finally {
        await svc.proxy?.restore();
      }
    },
  );

  it("covered every documented response of every operation", () => {
    const documented = operations().flatMap(({ path, method, op }) =>
      Object.keys(op.responses ?? {})
        // Only the MySQL run can cut the database connection.
        .filter((status) => status !== "503" || testStore() === "mysql")
        .map((status) => `${method} ${path} ${status}`),
    );
    expect([...seen].sort()).toEqual(documented.sort());
  });
});
