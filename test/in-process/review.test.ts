import { timestampDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import {
  NothingDueSchema,
  SessionMode,
} from "../../gen/practice/v1/practice_session_service_pb.js";
import type { QuizListJson } from "../../src/rest/quiz-list.js";
import type { DueQuestionsJson, SessionDetailJson } from "../../src/rest/schemas.js";
import { insertQuiz } from "../support/fixtures.js";
import { fileService, userNames } from "../support/in-process.js";

// Review over every transport: REST through app.inject(), Connect through the
// in-memory router (the service's routes and interceptors), on one fake clock.
const svc = await fileService();
const newUser = userNames("learner");
const MINUTE = 60_000;

const json = { "content-type": "application/json" };

/** A learner who practised the quiz once, with `wrong` of its questions answered wrongly. */
async function practised(questions: number, wrong: number) {
  const user = newUser();
  const quiz = await insertQuiz(svc.db, { questions });
  const { session } = await svc.sessions.startSession(user, quiz.quizId);
  for (const [i, questionId] of quiz.questionIds.entries()) {
    const userAnswer = i < wrong ? "no" : `A${i + 1}`;
    await svc.sessions.submitAnswer(user, { sessionId: session.id, questionId, userAnswer });
  }
  await svc.sessions.completeSession(user, session.id);
  return { user, quiz };
}

describe("GET /quizzes/{quiz_id}/review", () => {
  it("lists the caller's questions due now, earliest first, with counts and the next due time", async () => {
    const { user, quiz } = await practised(3, 2);
    const before = await svc.rest(user, "GET", `/quizzes/${quiz.quizId}/review`);
    expect(before.status).toBe(200);
    const waiting = (await before.json()) as DueQuestionsJson;
    expect(waiting).toEqual({
      questions: [],
      due_count: 0,
      new_count: 0,
      next_due_at: expect.any(String),
      next_cursor: null,
    });

    svc.clock.advance(2 * MINUTE);
    const res = await svc.rest(user, "GET", `/api/quizzes/${quiz.quizId}/review`);
    const body = (await res.json()) as DueQuestionsJson;
    expect(body.due_count).toBe(2);
    expect(
      body.questions.map((q) => [q.question_id, q.position, q.last_correct, q.reps, q.lapses]),
    ).toEqual([
      [quiz.questionIds[0], 1, false, 1, 0],
      [quiz.questionIds[1], 2, false, 1, 0],
    ]);
    for (const q of body.questions) {
      expect(Object.keys(q).sort()).toEqual([
        "due_at",
        "lapses",
        "last_answered_at",
        "last_correct",
        "position",
        "question_id",
        "reps",
      ]);
      expect(q.due_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    }
    // The right answer is next: Good from new is ten minutes.
    expect(Date.parse(body.next_due_at ?? "")).toBe(
      Date.parse(body.questions[0]?.last_answered_at ?? "") + 10 * MINUTE,
    );
  });

  it("pages with limit and cursor; a bad limit or cursor is 400 invalid_argument", async () => {
    const { user, quiz } = await practised(3, 3);
    svc.clock.advance(2 * MINUTE);
    const first = (await (
      await svc.rest(user, "GET", `/quizzes/${quiz.quizId}/review?limit=2`)
    ).json()) as DueQuestionsJson;
    expect([first.questions.length, first.due_count]).toEqual([2, 3]);
    expect(first.next_cursor).toEqual(expect.any(String));
    const rest = (await (
      await svc.rest(
        user,
        "GET",
        `/quizzes/${quiz.quizId}/review?limit=2&cursor=${first.next_cursor}`,
      )
    ).json()) as DueQuestionsJson;
    expect([rest.questions.length, rest.due_count, rest.next_cursor]).toEqual([1, 3, null]);
    expect([...first.questions, ...rest.questions].map((q) => q.question_id)).toEqual(
      quiz.questionIds,
    );
    for (const query of ["limit=0", "limit=101", "limit=x", "cursor=nope", "limit=1&limit=2"]) {
      const res = await svc.rest(user, "GET", `/quizzes/${quiz.quizId}/review?${query}`);
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ code: "invalid_argument" });
    }
    const rpc = await svc.rpc.listDueQuestions(
      { quizId: quiz.quizId, limit: 2 },
      { headers: await svc.auth(user) },
    );
    expect([rpc.questions.length, rpc.dueCount, rpc.nextCursor]).toEqual([2, 3, first.next_cursor]);
  });

  it("is the same 404 as the list for a missing quiz, and 401 without a token", async () => {
    const missing = await svc.rest(newUser(), "GET", "/quizzes/999999/review");
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ code: "not_found", detail: "quiz not found" });
    const list = await svc.rest(newUser(), "GET", "/quizzes/999999/sessions");
    expect(await list.json()).toMatchObject({ detail: "quiz not found" });
    expect((await svc.rest(null, "GET", "/quizzes/1/review")).status).toBe(401);
  });
});

describe("POST /quizzes/{quiz_id}/sessions with a mode", () => {
  it('{"mode":"review"} snapshots the due questions (201); the session says its mode', async () => {
    const { user, quiz } = await practised(3, 2);
    svc.clock.advance(2 * MINUTE);
    const res = await svc.rest(user, "POST", `/quizzes/${quiz.quizId}/sessions`, {
      headers: json,
      body: '{"mode":"review"}',
    });
    expect(res.status).toBe(201);
    const body = (await res.json()) as SessionDetailJson;
    expect(body.mode).toBe("review");
    expect(body.total_questions).toBe(2);
    expect(body.questions.map((q) => q.question_id)).toEqual(quiz.questionIds.slice(0, 2));
    // A full start meanwhile resumes it (200).
    const resumed = await svc.rest(user, "POST", `/quizzes/${quiz.quizId}/sessions`);
    expect(resumed.status).toBe(200);
    expect(((await resumed.json()) as SessionDetailJson).id).toBe(body.id);
    const list = await svc.rest(user, "GET", `/quizzes/${quiz.quizId}/sessions`);
    const modes = ((await list.json()) as { sessions: { mode: string }[] }).sessions.map(
      (s) => s.mode,
    );
    expect(modes).toEqual(["review", "full"]);
  });

  it('no body, {} and {"mode":"full"} start the whole quiz, as before', async () => {
    for (const body of [undefined, "{}", '{"mode":"full"}']) {
      const user = newUser();
      const quiz = await insertQuiz(svc.db, { questions: 2 });
      const res = await svc.rest(user, "POST", `/quizzes/${quiz.quizId}/sessions`, {
        ...(body && { headers: json, body }),
      });
      expect(res.status).toBe(201);
      expect(await res.json()).toMatchObject({ mode: "full", total_questions: 2 });
    }
  });

  it("nothing due is 400 failed_precondition with next_due_at; a bad mode is 400 invalid_argument", async () => {
    const { user, quiz } = await practised(2, 0);
    const res = await svc.rest(user, "POST", `/quizzes/${quiz.quizId}/sessions`, {
      headers: json,
      body: '{"mode":"review"}',
    });
    expect(res.status).toBe(400);
    expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    const problem = await res.json();
    expect(problem).toEqual({
      type: "about:blank",
      title: "Bad Request",
      status: 400,
      detail: "no question of this quiz is due for review yet",
      code: "failed_precondition",
      next_due_at: expect.stringMatching(/Z$/),
    });
    const fresh = await svc.rest(newUser(), "POST", `/quizzes/${quiz.quizId}/sessions`, {
      headers: json,
      body: '{"mode":"review"}',
    });
    expect(await fresh.json()).toMatchObject({ next_due_at: null });
    for (const body of ['{"mode":"again"}', '{"mode":2}']) {
      const bad = await svc.rest(user, "POST", `/quizzes/${quiz.quizId}/sessions`, {
        headers: json,
        body,
      });
      expect(bad.status).toBe(400);
      expect(await bad.json()).toMatchObject({
        code: "invalid_argument",
        detail: 'mode must be "full", "review" or "missed"',
      });
    }
  });
});

describe("review over Connect", () => {
  it("ListDueQuestions, StartSession with mode REVIEW, NothingDue as an error detail", async () => {
    const { user, quiz } = await practised(2, 1);
    const headers = await svc.auth(user);
    const refused = await svc.rpc
      .startSession({ quizId: quiz.quizId, mode: SessionMode.REVIEW }, { headers })
      .catch((e: unknown) => ConnectError.from(e));
    expect(refused).toBeInstanceOf(ConnectError);
    const err = refused as ConnectError;
    expect(err.code).toBe(Code.FailedPrecondition);
    const [detail] = err.findDetails(NothingDueSchema);
    const waiting = await svc.rpc.listDueQuestions({ quizId: quiz.quizId }, { headers });
    expect(detail?.nextDueAt).toEqual(waiting.nextDueAt);

    svc.clock.advance(2 * MINUTE);
    const due = await svc.rpc.listDueQuestions({ quizId: quiz.quizId }, { headers });
    expect(due.dueCount).toBe(1);
    expect(due.questions[0]).toMatchObject({
      questionId: quiz.questionIds[0],
      position: 1,
      lastCorrect: false,
      reps: 1,
    });
    expect(due.newCount).toBe(0);
    expect(due.nextDueAt && timestampDate(due.nextDueAt) > svc.clock.now()).toBe(true);

    const started = await svc.rpc.startSession(
      { quizId: quiz.quizId, mode: SessionMode.REVIEW },
      { headers },
    );
    expect(started.created).toBe(true);
    expect(started.session?.mode).toBe(SessionMode.REVIEW);
    expect(started.questions.map((q) => q.questionId)).toEqual([quiz.questionIds[0]]);
    const full = await svc.rpc.startSession({ quizId: quiz.quizId }, { headers });
    expect([full.created, full.session?.id, full.session?.mode]).toEqual([
      false,
      started.session?.id,
      SessionMode.REVIEW,
    ]);
  });

  it("an unknown mode is invalid_argument; summaries say FULL for a full session", async () => {
    const user = newUser();
    const quiz = await insertQuiz(svc.db, { questions: 1 });
    const headers = await svc.auth(user);
    const err = await svc.rpc
      .startSession({ quizId: quiz.quizId, mode: 7 as SessionMode }, { headers })
      .catch((e: unknown) => ConnectError.from(e));
    expect((err as ConnectError).code).toBe(Code.InvalidArgument);
    await svc.rpc.startSession({ quizId: quiz.quizId }, { headers });
    const page = await svc.rpc.listSessions({ quizId: quiz.quizId }, { headers });
    expect(page.sessions.map((s) => s.mode)).toEqual([SessionMode.FULL]);
  });

  it("ListQuizzes and GET /quizzes carry each quiz's due count", async () => {
    const { user, quiz } = await practised(3, 2);
    svc.clock.advance(2 * MINUTE);
    const page = await svc.quizRpc.listQuizzes({ limit: 100 }, { headers: await svc.auth(user) });
    expect(page.quizzes.find((q) => q.id === quiz.quizId)?.dueCount).toBe(2);
    const rest = (await (await svc.rest(user, "GET", "/quizzes?limit=100")).json()) as QuizListJson;
    expect(rest.quizzes.find((q) => q.id === quiz.quizId)?.due_count).toBe(2);
    const other = (await (
      await svc.rest(newUser(), "GET", "/quizzes?limit=100")
    ).json()) as QuizListJson;
    expect(other.quizzes.find((q) => q.id === quiz.quizId)?.due_count).toBe(0);
  });
});
