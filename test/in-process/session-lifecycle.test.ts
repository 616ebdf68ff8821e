import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type {
  AnswerJson,
  PageJson,
  SessionDetailJson,
  SessionJson,
  SummaryJson,
} from "../../src/rest/schemas.js";
import { countRows, insertQuestion, insertQuiz } from "../support/fixtures.js";
import {
  type InProcessService,
  type RestInit,
  startInProcessService,
} from "../support/in-process.js";

let svc: InProcessService;
let userCounter = 0;
const newUser = () => `life-${++userCounter}`;

beforeAll(async () => {
  svc = await startInProcessService();
});
afterAll(async () => {
  await svc?.close();
});

type Problem = { code?: string; detail?: string };

async function rest<T>(user: string, method: string, path: string, body?: unknown) {
  const init: RestInit =
    body === undefined
      ? {}
      : { body: JSON.stringify(body), headers: { "content-type": "application/json" } };
  const res = await svc.rest(user, method, path, init);
  return { status: res.status, body: (await res.json()) as T & Problem };
}

const start = (user: string, quizId: string) =>
  rest<SessionJson>(user, "POST", `/quizzes/${quizId}/sessions`);
const answer = (user: string, sessionId: string, questionId: string, userAnswer: string) =>
  rest<{ answer: AnswerJson; session: SummaryJson }>(
    user,
    "POST",
    `/sessions/${sessionId}/answers`,
    {
      question_id: questionId,
      user_answer: userAnswer,
    },
  );
const complete = (user: string, sessionId: string) =>
  rest<SessionJson>(user, "POST", `/api/sessions/${sessionId}/complete`);
const get = (user: string, sessionId: string) =>
  rest<SessionDetailJson>(user, "GET", `/sessions/${sessionId}`);

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

describe("a session's life", () => {
  it("over REST: start, answer every question (some right), complete, see the score in the history, start anew", async () => {
    const user = newUser();
    const quiz = await insertQuiz(svc.db, { questions: 4 }); // correct answers are A1..A4
    const [q1, q2, q3, q4] = quiz.questionIds as [string, string, string, string];
    const started = await start(user, quiz.quizId);
    expect(started.status).toBe(201);
    const id = started.body.id;

    const given = [
      [q1, "A1", true],
      [q2, "  a2 ", true], // trimmed, case-insensitive
      [q3, "wrong", false],
      [q4, "A4!", false],
    ] as const;
    for (const [questionId, text, correct] of given) {
      const res = await answer(user, id, questionId, text);
      expect(res.status).toBe(201);
      expect(res.body.answer).toEqual({
        question_id: questionId,
        user_answer: text,
        is_correct: correct,
        answered_at: svc.clock.now().toISOString(),
      });
      svc.clock.advance(1000);
    }
    const afterAnswers = await get(user, id);
    expect(afterAnswers.body.correct_answers).toBe(2);
    expect(afterAnswers.body.answers.map((a) => a.question_id)).toEqual([q1, q2, q3, q4]);

    const done = await complete(user, id);
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({
      id,
      completed_at: svc.clock.now().toISOString(),
      total_questions: 4,
      correct_answers: 2,
      score_percentage: 50,
    });
    expect(done.body.answers).toHaveLength(4);

    const history = await rest<PageJson>(
      user,
      "GET",
      `/quizzes/${quiz.quizId}/sessions?status=completed`,
    );
    expect(history.body.sessions).toEqual([
      expect.objectContaining({ id, score_percentage: 50, correct_answers: 2 }),
    ]);

    const again = await start(user, quiz.quizId);
    expect(again.status).toBe(201);
    expect(again.body.id).not.toBe(id);
  });

  it("over RPC: the same flow, with created, counts and score", async () => {
    const headers = await svc.auth(newUser());
    const quiz = await insertQuiz(svc.db, { questions: 3 });
    const [q1, q2, q3] = quiz.questionIds as [string, string, string];
    const { session } = await svc.rpc.startSession({ quizId: quiz.quizId }, { headers });
    const sessionId = session?.id ?? "";

    const first = await svc.rpc.submitAnswer(
      { sessionId, questionId: q1, userAnswer: "a1" },
      { headers },
    );
    expect(first.answer?.isCorrect).toBe(true);
    expect(first.session?.correctAnswers).toBe(1);
    expect(first.session?.answers).toEqual([]);
    await svc.rpc.submitAnswer({ sessionId, questionId: q2, userAnswer: "nope" }, { headers });
    await svc.rpc.submitAnswer({ sessionId, questionId: q3, userAnswer: "A3" }, { headers });

    const done = await svc.rpc.completeSession({ sessionId }, { headers });
    expect(done.session?.scorePercentage).toBe(67);
    expect(done.session?.completedAt).toBeDefined();

    const detail = await svc.rpc.getSession({ sessionId }, { headers });
    expect(detail.session?.answers.map((a) => a.isCorrect)).toEqual([true, false, true]);
    expect(detail.questions.map((q) => [q.position, q.questionId])).toEqual([
      [1, q1],
      [2, q2],
      [3, q3],
    ]);

    const next = await svc.rpc.startSession({ quizId: quiz.quizId }, { headers });
    expect(next.created).toBe(true);
  });
});

describe("GetSession", () => {
  it("returns answers oldest first and the snapshot, with question_id null once a question is deleted", async () => {
    const user = newUser();
    const quiz = await insertQuiz(svc.db, { questions: 3 });
    const [q1, q2, q3] = quiz.questionIds as [string, string, string];
    const { body: s } = await start(user, quiz.quizId);
    for (const q of [q3, q1]) {
      await answer(user, s.id, q, "x");
      svc.clock.advance(10);
    }
    await svc.db.deleteFrom("questions").where("id", "=", q3).execute();

    const { status, body } = await get(user, s.id);
    expect(status).toBe(200);
    expect(body.answers.map((a) => a.question_id)).toEqual([null, q1]);
    expect(body.questions).toEqual([
      { position: 1, question_id: q1, correct_answer: null },
      { position: 2, question_id: q2, correct_answer: null },
      { position: 3, question_id: null, correct_answer: null },
    ]);
    expect(body.total_questions).toBe(3);
  });

  it("works after the quiz and its study guide are soft-deleted", async () => {
    const user = newUser();
    const quiz = await insertQuiz(svc.db);
    const { body: s } = await start(user, quiz.quizId);
    await svc.db
      .updateTable("quizzes")
      .set({ deleted_at: new Date() })
      .where("id", "=", quiz.quizId)
      .execute();
    await svc.db
      .updateTable("study_guides")
      .set({ deleted_at: new Date() })
      .where("id", "=", quiz.studyGuideId)
      .execute();
    expect((await get(user, s.id)).status).toBe(200);
    expect((await svc.rest(user, "GET", `/quizzes/${quiz.quizId}/sessions`)).status).toBe(404);
  });

  it("is 404 with one body for another user's session, an unknown id and a malformed id", async () => {
    const quiz = await insertQuiz(svc.db);
    const { body: s } = await start(newUser(), quiz.quizId);
    const bodies = new Set<string>();
    for (const id of [s.id, "01a00000-0000-7000-8000-000000000000", "nope", s.id.toUpperCase()]) {
      const res = await svc.rest(newUser(), "GET", `/api/sessions/${id}`);
      expect(res.status).toBe(404);
      bodies.add(await res.text());
      await expect(
        svc.rpc.getSession({ sessionId: id }, { headers: await svc.auth(newUser()) }),
      ).rejects.toMatchObject({ code: 5 });
    }
    expect([...bodies]).toEqual([
      '{"type":"about:blank","title":"Not Found","status":404,"detail":"session not found","code":"not_found"}',
    ]);
  });
});

describe("SubmitAnswer", () => {
  it("decides is_correct itself and ignores what the client claims", async () => {
    const user = newUser();
    const quiz = await insertQuiz(svc.db);
    const { body: s } = await start(user, quiz.quizId);
    const res = await rest<{ answer: AnswerJson }>(user, "POST", `/sessions/${s.id}/answers`, {
      question_id: quiz.questionIds[0],
      user_answer: "not it",
      is_correct: true,
    });
    expect(res.body.answer.is_correct).toBe(false);
    expect((await get(user, s.id)).body.correct_answers).toBe(0);
  });

  it("takes one answer per question: a second is 409 already_exists and changes nothing", async () => {
    const user = newUser();
    const quiz = await insertQuiz(svc.db);
    const q1 = quiz.questionIds[0] ?? "";
    const { body: s } = await start(user, quiz.quizId);
    expect((await answer(user, s.id, q1, "A1")).status).toBe(201);
    const before = await writes();
    const second = await answer(user, s.id, q1, "A1");
    expect(second.status).toBe(409);
    expect(second.body.code).toBe("already_exists");
    await expect(
      svc.rpc.submitAnswer(
        { sessionId: s.id, questionId: q1, userAnswer: "A1" },
        { headers: await svc.auth(user) },
      ),
    ).rejects.toMatchObject({ code: 6 });
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
});

describe("CompleteSession", () => {
  it("refuses a second completion and changes nothing", async () => {
    const user = newUser();
    const quiz = await insertQuiz(svc.db);
    const { body: s } = await start(user, quiz.quizId);
    const first = await complete(user, s.id);
    svc.clock.advance(5000);
    const second = await complete(user, s.id);
    expect(second.status).toBe(400);
    expect(second.body.code).toBe("failed_precondition");
    expect((await get(user, s.id)).body.completed_at).toBe(first.body.completed_at);
    await expect(
      svc.rpc.completeSession({ sessionId: s.id }, { headers: await svc.auth(user) }),
    ).rejects.toMatchObject({ code: 9 });
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
  it("when 30 answers to one question race, one lands and 29 get 409; correct_answers matches the rows", async () => {
    const user = newUser();
    const quiz = await insertQuiz(svc.db);
    const { body: s } = await start(user, quiz.quizId);
    const headers = await svc.auth(user);
    const q1 = quiz.questionIds[0] ?? "";
    const statuses = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        i % 2
          ? answer(user, s.id, q1, "A1").then((r) => r.status)
          : svc.rpc
              .submitAnswer({ sessionId: s.id, questionId: q1, userAnswer: "A1" }, { headers })
              .then(
                () => 201,
                (e: { code: number }) => (e.code === 6 ? 409 : e.code),
              ),
      ),
    );
    expect(statuses.filter((c) => c === 201)).toHaveLength(1);
    expect(statuses.filter((c) => c === 409)).toHaveLength(29);
    const detail = await get(user, s.id);
    expect(detail.body.answers).toHaveLength(1);
    expect(detail.body.correct_answers).toBe(1);
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
