import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testStore } from "../support/database.js";
import { insertQuiz, type QuizFixture } from "../support/fixtures.js";
import { reportFigures } from "../support/reliability.js";
import { startTestService, type TestService } from "../support/service.js";

/**
 * A partition that takes one database connection away in the middle of a
 * transaction, without the close reaching either side: the TCP proxy
 * freezes the connection that sends the answer's INSERT, after the
 * session's row lock was taken. MySQL only (SQLite has no connections).
 */
describe.skipIf(testStore() === "sqlite")("a transaction cut off mid-way", () => {
  let svc: TestService;
  let quiz: QuizFixture;

  beforeAll(async () => {
    // A statement limit of 3 s: lock waits must give up sooner than that.
    svc = await startTestService({ proxy: true, queryTimeoutMs: 3000 });
    quiz = await insertQuiz(svc.db, { questions: 3 });
  });
  afterAll(async () => {
    await svc?.close();
  });

  it("frees the session's row lock within seconds: the next answer goes through", async () => {
    const user = "partitioned";
    const start = await svc.rest(user, "POST", `/quizzes/${quiz.quizId}/sessions`);
    const { id } = (await start.json()) as { id: string };
    const answer = (questionId: string | undefined) =>
      svc.rest(user, "POST", `/sessions/${id}/answers`, {
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ question_id: questionId, user_answer: "A" }),
      });

    svc.proxy?.freezeOn("insert into `practice_session_answers`");
    const cutOff = await answer(quiz.questionIds[0]);
    expect(svc.proxy?.frozen).toBe(1);
    expect(cutOff.status).toBe(503);

    // Bounded: three tries. Without limits the lock stays for hours
    // (MariaDB's defaults) and every try waits 50 s for it, past its own timeout.
    const statuses: number[] = [];
    for (let i = 0; i < 3 && statuses.at(-1) !== 201; i++) {
      statuses.push((await answer(quiz.questionIds[1])).status);
    }
    reportFigures("row lock of a partitioned transaction", { triesAfterCut: statuses });
    expect(statuses.at(-1)).toBe(201);
  });
});
