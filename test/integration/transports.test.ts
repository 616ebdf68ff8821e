import { execFile } from "node:child_process";
import { connect as http2Connect } from "node:http2";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PageJson } from "../../src/rest/schemas.js";
import { insertQuiz, type QuizFixture } from "../support/fixtures.js";
import { startTestService, type TestService } from "../support/service.js";

let svc: TestService;
let quiz: QuizFixture;
const USER = "transport-user";

beforeAll(async () => {
  svc = await startTestService();
  quiz = await insertQuiz(svc.db);
});
afterAll(async () => {
  await svc?.close();
});

/** One request over HTTP/2 with prior knowledge (h2c). */
async function h2Request(path: string, headers: Record<string, string>) {
  const session = http2Connect(svc.baseUrl);
  try {
    return await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = session.request({ ":path": path, ...headers });
      let body = "";
      let status = 0;
      req.on("response", (h) => {
        status = Number(h[":status"]);
      });
      req.setEncoding("utf8");
      req.on("data", (chunk) => {
        body += chunk;
      });
      req.on("end", () => resolve({ status, body }));
      req.on("error", reject);
      req.end();
    });
  } finally {
    session.close();
  }
}

describe("one port, every transport", () => {
  it("serves REST over HTTP/1.1 and over HTTP/2 (h2c) alike", async () => {
    const started = await svc.rest(USER, "POST", `/quizzes/${quiz.quizId}/sessions`);
    expect(started.status).toBe(201);
    const h1 = (await (
      await svc.rest(USER, "GET", `/quizzes/${quiz.quizId}/sessions`)
    ).json()) as PageJson;
    const h2 = await h2Request(`/api/quizzes/${quiz.quizId}/sessions`, await svc.auth(USER));
    expect(h2.status).toBe(200);
    expect(JSON.parse(h2.body)).toEqual(h1);
    expect(h1.sessions).toHaveLength(1);
  });

  it("serves Connect JSON over HTTP/1.1 POST, and GET for the side-effect-free ListSessions", async () => {
    const headers = { ...(await svc.auth(USER)), "content-type": "application/json" };
    const post = await fetch(`${svc.baseUrl}/practice.v1.PracticeSessionService/ListSessions`, {
      method: "POST",
      headers,
      body: JSON.stringify({ quizId: quiz.quizId, limit: 5 }),
    });
    expect(post.status).toBe(200);
    const body = (await post.json()) as { sessions: { quizId: string; totalQuestions: number }[] };
    expect(body.sessions[0]).toMatchObject({ quizId: quiz.quizId, totalQuestions: 3 });

    const message = encodeURIComponent(JSON.stringify({ quizId: quiz.quizId }));
    const get = await fetch(
      `${svc.baseUrl}/practice.v1.PracticeSessionService/ListSessions?connect=v1&encoding=json&message=${message}`,
      { headers: await svc.auth(USER) },
    );
    expect(get.status).toBe(200);
  });

  it("gives Connect errors their HTTP status over Connect JSON", async () => {
    const res = await fetch(`${svc.baseUrl}/practice.v1.PracticeSessionService/ListSessions`, {
      method: "POST",
      headers: { ...(await svc.auth(USER)), "content-type": "application/json" },
      body: JSON.stringify({ quizId: "123456789" }),
    });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ code: "not_found", message: "quiz not found" });
  });

  it("serves gRPC-Web", async () => {
    const page = await svc.grpcWeb.listSessions(
      { quizId: quiz.quizId },
      { headers: await svc.auth(USER) },
    );
    expect(page.sessions).toHaveLength(1);
  });

  it("serves gRPC to buf curl", async () => {
    const { stdout } = await promisify(execFile)("node_modules/.bin/buf", [
      "curl",
      "--protocol",
      "grpc",
      "--http2-prior-knowledge",
      "--schema",
      "proto",
      "-H",
      `authorization: Bearer ${await svc.token(USER)}`,
      "-d",
      JSON.stringify({ quiz_id: quiz.quizId }),
      `${svc.baseUrl}/practice.v1.PracticeSessionService/StartSession`,
    ]);
    const response = JSON.parse(stdout);
    expect(response.session.quizId).toBe(quiz.quizId);
    expect(response.created).toBeUndefined(); // false: a resume
  });

  it("carries a whole session over grpc-js: start, answers, completion, detail, quiz content", async () => {
    // The rules themselves are tested in process (test/app, test/in-process); this is the
    // gRPC transport end to end: created, counts, score, snapshot and review on the wire.
    const headers = await svc.auth("grpc-walker");
    const quiz = await insertQuiz(svc.db, { questions: 3 });
    const [q1, q2, q3] = quiz.questionIds as [string, string, string];
    const started = await svc.grpc.startSession({ quizId: quiz.quizId }, headers);
    expect(started.created).toBe(true);
    expect(started.questions.map((q) => q.questionId)).toEqual([q1, q2, q3]);
    const sessionId = started.session?.id ?? "";
    const first = await svc.grpc.submitAnswer(
      { sessionId, questionId: q1, userAnswer: "a1" },
      headers,
    );
    expect(first.answer?.isCorrect).toBe(true);
    expect(first.session).toMatchObject({ correctAnswers: 1, answeredQuestions: 1 });
    await svc.grpc.submitAnswer({ sessionId, questionId: q2, userAnswer: "nope" }, headers);
    await svc.grpc.submitAnswer({ sessionId, questionId: q3, userAnswer: "A3" }, headers);
    const done = await svc.grpc.completeSession({ sessionId }, headers);
    expect(done.session?.scorePercentage).toBe(67);
    expect(done.session?.completedAt).toBeDefined();
    const detail = await svc.grpc.getSession({ sessionId }, headers);
    expect(detail.session?.answers.map((a) => a.isCorrect)).toEqual([true, false, true]);
    expect(detail.questions.map((q) => q.correctAnswer)).toEqual(["A1", "A2", "A3"]);
    const content = await svc.quizGrpc.getQuiz({ quizId: quiz.quizId }, headers);
    expect(content.quiz?.questions.map((q) => q.id)).toEqual([q1, q2, q3]);
    await expect(svc.grpc.getSession({ sessionId: "nope" }, headers)).rejects.toMatchObject({
      code: 5,
      details: "session not found",
    });
  });

  it("answers a known path with a method it does not take with a problem+json 405 naming the ones it does", async () => {
    const cases: [string, string, string][] = [
      ["DELETE", "/sessions/0190a1b2-0000-7000-8000-000000000000", "GET, HEAD"],
      ["PUT", "/api/sessions/0190a1b2-0000-7000-8000-000000000000", "GET, HEAD"],
      ["GET", "/sessions/0190a1b2-0000-7000-8000-000000000000/complete", "POST"],
      ["DELETE", "/quizzes/1/sessions", "GET, HEAD, POST"],
      ["POST", "/healthz", "GET, HEAD"],
    ];
    for (const [method, path, allow] of cases) {
      const res = await svc.rest(USER, method, path);
      expect(res.status, `${method} ${path}`).toBe(405);
      expect(res.headers.get("allow"), `${method} ${path}`).toBe(allow);
      expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
      expect(await res.json()).toMatchObject({
        status: 405,
        title: "Method Not Allowed",
        detail: `${method} is not allowed here; allowed: ${allow}`,
      });
    }
  });

  it("answers an unknown path with a problem+json 404", async () => {
    const res = await svc.rest(USER, "GET", "/nothing/here");
    expect(res.status).toBe(404);
    expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    expect(await res.json()).toMatchObject({ code: "not_found", detail: "no such route" });
  });
});
