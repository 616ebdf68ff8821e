import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SessionMode } from "../../gen/practice/v1/practice_session_service_pb.js";
import type { DueQuestionsJson, SessionDetailJson } from "../../src/rest/schemas.js";
import { insertQuiz } from "../support/fixtures.js";
import { startTestService, type TestService } from "../support/service.js";

// A learner finishes a round with 2 wrong and 1 skipped of 5 and at once
// practises what they missed: over REST and over gRPC (grpc-js), on the
// listening service, with its fake clock for "two days later".
let svc: TestService;

beforeAll(async () => {
  svc = await startTestService();
});

afterAll(async () => {
  await svc?.close();
});

const DAY = 24 * 60 * 60 * 1000;

describe("practise what you missed", () => {
  it("REST: 201 with exactly the 2 wrong and the 1 skipped question, in quiz order; the skipped one due two days later", async () => {
    const user = "missed-rest";
    const quiz = await insertQuiz(svc.db, { questions: 5 });
    const q = quiz.questionIds;
    const start = await svc.rest(user, "POST", `/quizzes/${quiz.quizId}/sessions`);
    const { id } = (await start.json()) as SessionDetailJson;
    for (const [questionId, userAnswer] of [
      [q[0], "A1"],
      [q[3], "nope"],
      [q[1], "no"],
      [q[4], "A5"],
    ]) {
      const res = await svc.rest(user, "POST", `/sessions/${id}/answers`, {
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ question_id: questionId, user_answer: userAnswer }),
      });
      expect(res.status).toBe(201);
    }
    expect((await svc.rest(user, "POST", `/sessions/${id}/complete`)).status).toBe(200);

    const missed = await svc.rest(user, "POST", `/quizzes/${quiz.quizId}/sessions`, {
      headers: { "content-type": "application/json" },
      body: '{"mode":"missed"}',
    });
    expect(missed.status).toBe(201);
    const body = (await missed.json()) as SessionDetailJson;
    expect(body).toMatchObject({ mode: "missed", total_questions: 3, answers: [] });
    expect(body.questions.map((x) => x.question_id)).toEqual([q[1], q[2], q[3]]);
    // Started again at once: the same session, resumed.
    const again = await svc.rest(user, "POST", `/quizzes/${quiz.quizId}/sessions`, {
      headers: { "content-type": "application/json" },
      body: '{"mode":"missed"}',
    });
    expect(again.status).toBe(200);
    expect(((await again.json()) as SessionDetailJson).id).toBe(body.id);
    const list = await svc.rest(user, "GET", `/quizzes/${quiz.quizId}/sessions`);
    const page = (await list.json()) as { sessions: { mode: string }[] };
    expect(page.sessions.map((s) => s.mode)).toEqual(["missed", "full"]);

    svc.clock.advance(2 * DAY);
    const due = (await (
      await svc.rest(user, "GET", `/quizzes/${quiz.quizId}/review`)
    ).json()) as DueQuestionsJson;
    const skipped = due.questions.find((x) => x.question_id === q[2]);
    expect(skipped).toMatchObject({ last_correct: false, reps: 1 });
    expect(due.new_count).toBe(0);
  });

  it("REST: 400 failed_precondition when nothing was missed, and a bad mode names the three", async () => {
    const user = "missed-rest-none";
    const quiz = await insertQuiz(svc.db, { questions: 1 });
    const none = await svc.rest(user, "POST", `/quizzes/${quiz.quizId}/sessions`, {
      headers: { "content-type": "application/json" },
      body: '{"mode":"missed"}',
    });
    expect(none.status).toBe(400);
    expect(await none.json()).toMatchObject({ code: "failed_precondition" });
    const bad = await svc.rest(user, "POST", `/quizzes/${quiz.quizId}/sessions`, {
      headers: { "content-type": "application/json" },
      body: '{"mode":"wrong"}',
    });
    expect(await bad.json()).toMatchObject({
      code: "invalid_argument",
      detail: 'mode must be "full", "review" or "missed"',
    });
  });

  it("gRPC: SESSION_MODE_MISSED gives exactly those 3 questions; FAILED_PRECONDITION when nothing was missed", async () => {
    const headers = await svc.auth("missed-grpc");
    const quiz = await insertQuiz(svc.db, { questions: 5 });
    const q = quiz.questionIds;
    const none = await svc.grpc
      .startSession({ quizId: quiz.quizId, mode: SessionMode.MISSED }, headers)
      .catch((e: grpc.ServiceError) => e);
    expect((none as grpc.ServiceError).code).toBe(grpc.status.FAILED_PRECONDITION);

    const { session } = await svc.grpc.startSession({ quizId: quiz.quizId }, headers);
    const sessionId = session?.id ?? "";
    for (const [questionId, userAnswer] of [
      [q[0], "A1"],
      [q[1], "no"],
      [q[3], "nope"],
      [q[4], "A5"],
    ] as const) {
      await svc.grpc.submitAnswer({ sessionId, questionId, userAnswer }, headers);
    }
    await svc.grpc.completeSession({ sessionId }, headers);
    const missed = await svc.grpc.startSession(
      { quizId: quiz.quizId, mode: SessionMode.MISSED },
      headers,
    );
    expect(missed.created).toBe(true);
    expect(missed.session?.mode).toBe(SessionMode.MISSED);
    expect(missed.session?.totalQuestions).toBe(3);
    expect(missed.questions.map((x) => x.questionId)).toEqual([q[1], q[2], q[3]]);
  });
});
