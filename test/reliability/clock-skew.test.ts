import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { insertQuiz, type QuizFixture } from "../support/fixtures.js";
import { startTestService, type TestService } from "../support/service.js";

/**
 * Replicas' clocks disagree: a session started on a replica whose clock is
 * ahead, then answered and completed on one whose clock is behind. Here one
 * service plays both, its clock set back between the calls.
 */
let svc: TestService;
let quiz: QuizFixture;

beforeAll(async () => {
  svc = await startTestService();
  quiz = await insertQuiz(svc.db, { questions: 2 });
});
afterAll(async () => {
  await svc?.close();
});

interface Json {
  started_at: string;
  completed_at: string | null;
  answers: { answered_at: string }[];
}

describe("clock skew between replicas", () => {
  it("never puts an answer or completed_at before started_at, nor completed_at before an answer", async () => {
    const user = "skewed";
    const start = await svc.rest(user, "POST", `/quizzes/${quiz.quizId}/sessions`);
    const session = (await start.json()) as Json & { id: string };
    const startedAt = Date.parse(session.started_at);

    // The next replica's clock is 30 s behind the first one's.
    svc.clock.advance(-30_000);
    const [first, second] = quiz.questionIds;
    const answer = await svc.rest(user, "POST", `/sessions/${session.id}/answers`, {
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ question_id: first, user_answer: "A1" }),
    });
    expect(answer.status).toBe(201);

    // A third one is ahead again for one answer, then completion comes from behind.
    svc.clock.advance(60_000);
    await svc.rest(user, "POST", `/sessions/${session.id}/answers`, {
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ question_id: second, user_answer: "no" }),
    });
    svc.clock.advance(-50_000);
    const done = await svc.rest(user, "POST", `/sessions/${session.id}/complete`);
    expect(done.status).toBe(200);

    const read = (await (await svc.rest(user, "GET", `/sessions/${session.id}`)).json()) as Json;
    const answered = read.answers.map((a) => Date.parse(a.answered_at));
    const completedAt = Date.parse(read.completed_at ?? "");
    expect(answered.every((t) => t >= startedAt)).toBe(true);
    expect(completedAt).toBeGreaterThanOrEqual(startedAt);
    expect(completedAt).toBeGreaterThanOrEqual(Math.max(...answered));
  });
});
