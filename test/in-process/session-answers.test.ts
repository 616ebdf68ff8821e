import { Code, ConnectError } from "@connectrpc/connect";
import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import { AnswerConflictSchema } from "../../gen/practice/v1/practice_session_service_pb.js";
import type { AnswerJson } from "../../src/rest/schemas.js";
import { countRows, insertQuestion, insertQuiz } from "../support/fixtures.js";
import { fileService, userNames } from "../support/in-process.js";
import { restCalls } from "../support/rest-calls.js";

const svc = await fileService();
const newUser = userNames("life");

const { rest, start, answer, complete, get } = restCalls(() => svc);

/** Writes that must not move when a request is refused. */
const writes = async () => [
  await countRows(svc.db, "practice_sessions"),
  await countRows(svc.db, "practice_session_answers"),
  (
    await sql<{
      n: number;
    }>`SELECT COALESCE(SUM(correct_answers), 0) AS n FROM practice_sessions`.execute(svc.db)
  ).rows[0]?.n,
];

describe("SubmitAnswer", () => {
  it("decides is_correct itself: a client's claim is a field the operation does not have", async () => {
    const user = newUser();
    const quiz = await insertQuiz(svc.db);
    const { body: s } = await start(user, quiz.quizId);
    const path = `/sessions/${s.id}/answers`;
    const answer = { question_id: quiz.questionIds[0], user_answer: "not it" };
    const claimed = await rest(user, "POST", path, { ...answer, is_correct: true });
    expect(claimed.status).toBe(400);
    expect(claimed.body).toMatchObject({
      code: "invalid_argument",
      errors: [{ field: "is_correct", message: "unknown field is_correct" }],
    });
    const res = await rest<{ answer: AnswerJson }>(user, "POST", path, answer);
    expect(res.body.answer.is_correct).toBe(false);
    expect((await get(user, s.id)).body.correct_answers).toBe(0);
  });

  it("takes the same answer again as a retry: 200 with the stored answer, nothing written", async () => {
    const user = newUser();
    const quiz = await insertQuiz(svc.db);
    const q1 = quiz.questionIds[0] ?? "";
    const { body: s } = await start(user, quiz.quizId);
    const first = await answer(user, s.id, q1, "A1");
    expect(first.status).toBe(201);
    const before = await writes();
    svc.clock.advance(1000);
    const again = await answer(user, s.id, q1, "A1");
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    const rpc = await svc.rpc.submitAnswer(
      { sessionId: s.id, questionId: q1, userAnswer: "A1" },
      { headers: await svc.auth(user) },
    );
    expect(rpc.answer?.userAnswer).toBe("A1");
    expect(rpc.session?.answeredQuestions).toBe(1);
    expect(await writes()).toEqual(before);
  });

  it("refuses a different answer with 409 already_exists and the stored answer, changing nothing", async () => {
    const user = newUser();
    const quiz = await insertQuiz(svc.db);
    const q1 = quiz.questionIds[0] ?? "";
    const { body: s } = await start(user, quiz.quizId);
    const first = await answer(user, s.id, q1, "A1");
    const before = await writes();
    const second = await answer(user, s.id, q1, "a1");
    expect(second.status).toBe(409);
    expect(second.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    expect(second.body).toEqual({
      type: "about:blank",
      title: "Conflict",
      status: 409,
      detail: "question already answered in this session",
      code: "already_exists",
      stored_answer: first.body.answer,
    });
    const err = await svc.rpc
      .submitAnswer(
        { sessionId: s.id, questionId: q1, userAnswer: "a1" },
        { headers: await svc.auth(user) },
      )
      .catch((e: unknown) => ConnectError.from(e));
    expect(err).toMatchObject({ code: Code.AlreadyExists });
    const [detail] = (err as ConnectError).findDetails(AnswerConflictSchema);
    expect(detail?.storedAnswer).toMatchObject({
      questionId: q1,
      userAnswer: "A1",
      isCorrect: true,
    });
    expect(await writes()).toEqual(before);
  });

  it.each([
    [
      "a question of another quiz",
      async () => (await insertQuiz(svc.db)).questionIds[0] ?? "",
      "A1",
      400,
      "invalid_argument",
    ],
    [
      "a question added after the start",
      async (quizId: string) => insertQuestion(svc.db, quizId, 9),
      "A9",
      400,
      "invalid_argument",
    ],
    ["a question that names none", async () => "99999999", "A1", 400, "invalid_argument"],
    ["a malformed question id", async () => "q-1", "A1", 400, "invalid_argument"],
    ["an empty answer", async () => "", "", 400, "invalid_argument"],
    ["a white-space answer", async () => "", " \t\n", 400, "invalid_argument"],
    ["an answer of 1001 characters", async () => "", "x".repeat(1001), 400, "invalid_argument"],
  ])("refuses %s with a 4xx and writes nothing", async (_name, questionOf, text, status, code) => {
    const user = newUser();
    const quiz = await insertQuiz(svc.db);
    const { body: s } = await start(user, quiz.quizId);
    const questionId = (await questionOf(quiz.quizId)) || (quiz.questionIds[0] ?? "");
    const before = await writes();
    const res = await answer(user, s.id, questionId, text);
    expect(res.status).toBe(status);
    expect(res.body.code).toBe(code);
    expect(await writes()).toEqual(before);
  });

  it("refuses a question deleted since the start", async () => {
    const user = newUser();
    const quiz = await insertQuiz(svc.db);
    const { body: s } = await start(user, quiz.quizId);
    await svc.db
      .deleteFrom("questions")
      .where("id", "=", quiz.questionIds[1] ?? "")
      .execute();
    const res = await answer(user, s.id, quiz.questionIds[1] ?? "", "A2");
    expect(res.status).toBe(400);
  });

  it("accepts 1000 characters, counted as characters (emoji are one each)", async () => {
    const user = newUser();
    const quiz = await insertQuiz(svc.db);
    const { body: s } = await start(user, quiz.quizId);
    const res = await answer(user, s.id, quiz.questionIds[0] ?? "", "😀".repeat(1000));
    expect(res.status).toBe(201);
    expect(res.body.answer.user_answer).toBe("😀".repeat(1000));
  });

  it.each([
    ["no body", undefined],
    ["a missing user_answer", { question_id: "1" }],
    ["a numeric question_id", { question_id: 1, user_answer: "a" }],
    ["a null user_answer", { question_id: "1", user_answer: null }],
    ["an array", []],
  ])("is 400 for %s", async (_name, body) => {
    const user = newUser();
    const quiz = await insertQuiz(svc.db);
    const { body: s } = await start(user, quiz.quizId);
    const res = await rest(user, "POST", `/sessions/${s.id}/answers`, body);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("invalid_argument");
  });

  it("is 404 for another user's session and failed_precondition for a completed one", async () => {
    const owner = newUser();
    const quiz = await insertQuiz(svc.db);
    const { body: s } = await start(owner, quiz.quizId);
    const other = await answer(newUser(), s.id, quiz.questionIds[0] ?? "", "A1");
    expect(other.status).toBe(404);
    expect(other.body.detail).toBe("session not found");

    await complete(owner, s.id);
    const before = await writes();
    const late = await answer(owner, s.id, quiz.questionIds[0] ?? "", "A1");
    expect(late.status).toBe(400);
    expect(late.body.code).toBe("failed_precondition");
    await expect(
      svc.rpc.submitAnswer(
        { sessionId: s.id, questionId: quiz.questionIds[0] ?? "", userAnswer: "A1" },
        { headers: await svc.auth(owner) },
      ),
    ).rejects.toMatchObject({ code: 9 });
    expect(await writes()).toEqual(before);
  });

  it("after completion, answers a retry of the last answer with 200 and a different one with 409", async () => {
    const user = newUser();
    const quiz = await insertQuiz(svc.db);
    const q1 = quiz.questionIds[0] ?? "";
    const { body: s } = await start(user, quiz.quizId);
    const first = await answer(user, s.id, q1, "A1");
    const done = await complete(user, s.id);
    const before = await writes();
    const again = await answer(user, s.id, q1, "A1");
    expect(again.status).toBe(200);
    expect(again.body.answer).toEqual(first.body.answer);
    expect(again.body.session).toMatchObject({
      completed_at: done.body.completed_at,
      score_percentage: done.body.score_percentage,
    });
    expect((await answer(user, s.id, q1, "B1")).status).toBe(409);
    expect(await writes()).toEqual(before);
  });
});

describe("CompleteSession", () => {
  it("answers a second completion with the same completed session and changes nothing", async () => {
    const user = newUser();
    const quiz = await insertQuiz(svc.db);
    const { body: s } = await start(user, quiz.quizId);
    await answer(user, s.id, quiz.questionIds[0] ?? "", "A1");
    const first = await complete(user, s.id);
    expect(first.status).toBe(200);
    const before = await writes();
    svc.clock.advance(5000);
    const second = await complete(user, s.id);
    expect(second.status).toBe(200);
    expect(second.body).toEqual(first.body);
    const rpc = await svc.rpc.completeSession(
      { sessionId: s.id },
      { headers: await svc.auth(user) },
    );
    expect(rpc.session?.scorePercentage).toBe(first.body.score_percentage);
    expect(rpc.session?.completedAt?.seconds).toBe(
      BigInt(Math.floor(Date.parse(first.body.completed_at ?? "") / 1000)),
    );
    expect(await writes()).toEqual(before);
  });

  it("is 404 for another user's session, and leaves it in progress", async () => {
    const owner = newUser();
    const quiz = await insertQuiz(svc.db);
    const { body: s } = await start(owner, quiz.quizId);
    expect((await complete(newUser(), s.id)).status).toBe(404);
    expect((await get(owner, s.id)).body.completed_at).toBeNull();
  });
});

describe("races", () => {
  it("when 30 identical answers to one question race, one lands and 29 are retries; one row, one event", async () => {
    const user = newUser();
    const quiz = await insertQuiz(svc.db);
    const { body: s } = await start(user, quiz.quizId);
    const headers = await svc.auth(user);
    const q1 = quiz.questionIds[0] ?? "";
    const eventsBefore = await countRows(svc.db, "practice_outbox");
    const statuses = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        i % 2
          ? answer(user, s.id, q1, "A1").then((r) => r.status)
          : svc.rpc
              .submitAnswer({ sessionId: s.id, questionId: q1, userAnswer: "A1" }, { headers })
              .then(
                () => 200,
                (e: { code: number }) => e.code,
              ),
      ),
    );
    // REST says 201 to the one that stored it; RPC says OK to all.
    expect(statuses.every((c) => c === 200 || c === 201)).toBe(true);
    expect(statuses.filter((c) => c === 201).length).toBeLessThanOrEqual(1);
    const detail = await get(user, s.id);
    expect(detail.body.answers).toHaveLength(1);
    expect(detail.body.correct_answers).toBe(1);
    expect(await countRows(svc.db, "practice_outbox")).toBe(eventsBefore + 1);
  });

  it("when 30 different answers to one question race, one lands and 29 get 409 with it", async () => {
    const user = newUser();
    const quiz = await insertQuiz(svc.db);
    const { body: s } = await start(user, quiz.quizId);
    const q1 = quiz.questionIds[0] ?? "";
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, i) => answer(user, s.id, q1, `A${i}`)),
    );
    const landed = results.filter((r) => r.status === 201);
    expect(landed).toHaveLength(1);
    const refused = results.filter((r) => r.status === 409);
    expect(refused).toHaveLength(29);
    for (const r of refused) {
      expect(r.body.stored_answer).toEqual(landed[0]?.body.answer);
    }
  });

  it("when 20 completions race, all get the same completed session; one event", async () => {
    const user = newUser();
    const quiz = await insertQuiz(svc.db);
    const { body: s } = await start(user, quiz.quizId);
    const eventsBefore = await countRows(svc.db, "practice_outbox");
    const results = await Promise.all(Array.from({ length: 20 }, () => complete(user, s.id)));
    expect(results.every((r) => r.status === 200)).toBe(true);
    expect(new Set(results.map((r) => r.body.completed_at)).size).toBe(1);
    expect(await countRows(svc.db, "practice_outbox")).toBe(eventsBefore + 1);
  });

  it("when answers race completion, each lands before completed_at and counts, or is refused", async () => {
    for (let round = 0; round < 5; round++) {
      const user = newUser();
      const quiz = await insertQuiz(svc.db, { questions: 12 });
      const { body: s } = await start(user, quiz.quizId);
      // The service's clock moves on its own here, as a real one would.
      const tick = setInterval(() => svc.clock.advance(1), 1);
      const answers = quiz.questionIds.map((q, i) =>
        answer(user, s.id, q, i % 3 ? `A${i + 1}` : "wrong"),
      );
      const completion = complete(user, s.id);
      const results = await Promise.all(answers);
      const done = await completion;
      clearInterval(tick);

      expect(done.status).toBe(200);
      for (const r of results) {
        expect(
          r.status === 201 || (r.status === 400 && r.body.code === "failed_precondition"),
        ).toBe(true);
      }
      const detail = await get(user, s.id);
      const landed = results.filter((r) => r.status === 201).length;
      expect(detail.body.answers).toHaveLength(landed);
      expect(detail.body.correct_answers).toBe(
        detail.body.answers.filter((a) => a.is_correct).length,
      );
      for (const a of detail.body.answers) {
        expect(a.answered_at <= (detail.body.completed_at ?? "")).toBe(true);
      }
    }
  });
});
