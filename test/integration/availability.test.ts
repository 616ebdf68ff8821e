import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testStore } from "../support/database.js";
import { countRows, insertQuiz, type QuizFixture } from "../support/fixtures.js";
import { startTestService, type TestService } from "../support/service.js";

let svc: TestService;
let quiz: QuizFixture;

beforeAll(async () => {
  if (testStore() === "sqlite") return;
  svc = await startTestService({ proxy: true });
  quiz = await insertQuiz(svc.db);
});
afterAll(async () => {
  await svc?.close();
});

// SQLite is a file in the process: there is no connection to cut.
describe.skipIf(testStore() === "sqlite")("while the database is unreachable", () => {
  it("answers 503 unavailable on every transport, then serves again once it is back", async () => {
    const user = "outage-user";
    expect((await svc.rest(user, "GET", `/quizzes/${quiz.quizId}/sessions`)).status).toBe(200);

    await svc.proxy?.cut();
    for (const [method, path] of [
      ["GET", `/quizzes/${quiz.quizId}/sessions`],
      ["POST", `/quizzes/${quiz.quizId}/sessions`],
    ] as const) {
      const res = await svc.rest(user, method, path);
      expect(res.status).toBe(503);
      expect(await res.json()).toEqual({
        type: "about:blank",
        title: "Service Unavailable",
        status: 503,
        detail: "service temporarily unavailable, try again",
        code: "unavailable",
      });
    }
    const headers = await svc.auth(user);
    await expect(svc.grpc.startSession({ quizId: quiz.quizId }, headers)).rejects.toMatchObject({
      code: 14,
    });
    const err = await svc.connect
      .listSessions({ quizId: quiz.quizId }, { headers })
      .catch((e) => e);
    expect(ConnectError.from(err).code).toBe(Code.Unavailable);
    expect(await countRows(svc.db, "practice_sessions")).toBe(0);

    await svc.proxy?.restore();
    const res = await svc.rest(user, "POST", `/quizzes/${quiz.quizId}/sessions`);
    expect(res.status).toBe(201);
  });
});
