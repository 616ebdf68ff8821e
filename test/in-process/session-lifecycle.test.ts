import { describe, expect, it } from "vitest";
import type { PageJson } from "../../src/rest/schemas.js";
import { insertQuiz } from "../support/fixtures.js";
import { fileService, userNames } from "../support/in-process.js";
import { restCalls } from "../support/rest-calls.js";

const svc = await fileService();
const newUser = userNames("life");

const { rest, start, answer, complete, get } = restCalls(() => svc);

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
