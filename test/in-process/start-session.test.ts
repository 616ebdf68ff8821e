import { describe, expect, it } from "vitest";
import { isDuplicateKey, ONE_ACTIVE_SESSION_KEY } from "../../src/db/errors.js";
import type { SessionDetailJson as SessionJson } from "../../src/rest/schemas.js";
import {
  countRows,
  insertAnswer,
  insertQuestion,
  insertQuiz,
  insertSessions,
  snapshotOf,
} from "../support/fixtures.js";
import { fileService, userNames } from "../support/in-process.js";
import { restCalls } from "../support/rest-calls.js";

const svc = await fileService();
const newUser = userNames("user");

const { startWithLocation: restStart } = restCalls(() => svc);

describe("starting a session", () => {
  it("creates a session (201, Location, empty answers) that freezes the quiz's questions", async () => {
    const user = newUser();
    const quiz = await insertQuiz(svc.db, { questions: 3 });
    const { status, location, body } = await restStart(user, quiz.quizId);

    expect(status).toBe(201);
    expect(location).toBe(`/sessions/${body.id}`);
    expect(body).toEqual({
      id: expect.stringMatching(
        /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
      ),
      quiz_id: quiz.quizId,
      started_at: svc.clock.now().toISOString(),
      completed_at: null,
      total_questions: 3,
      correct_answers: 0,
      score_percentage: null,
      answered_questions: 0,
      expires_at: new Date(svc.clock.now().getTime() + 7 * 86_400_000).toISOString(),
      mode: "full",
      answers: [],
      questions: quiz.questionIds.map((id, i) => ({
        position: i + 1,
        question_id: id,
        correct_answer: null,
      })),
    });
    expect(await snapshotOf(svc.db, body.id)).toEqual(
      quiz.questionIds.map((id, i) => ({ position: i + 1, question_id: id })),
    );
  });

  it("under /api gives a Location under /api", async () => {
    const quiz = await insertQuiz(svc.db);
    const res = await svc.rest(newUser(), "POST", `/api/quizzes/${quiz.quizId}/sessions`);
    const body = (await res.json()) as SessionJson;
    expect(res.status).toBe(201);
    expect(res.headers.get("location")).toBe(`/api/sessions/${body.id}`);
  });

  it("does not take questions added after the start into the snapshot", async () => {
    const user = newUser();
    const quiz = await insertQuiz(svc.db, { questions: 2 });
    const first = await restStart(user, quiz.quizId);
    await insertQuestion(svc.db, quiz.quizId, 3);

    const resumed = await restStart(user, quiz.quizId);
    expect(resumed.status).toBe(200);
    expect(resumed.body.total_questions).toBe(2);
    expect(await snapshotOf(svc.db, first.body.id)).toHaveLength(2);
  });

  it("keeps the snapshot entry and answers of a hard-deleted question, with question_id null", async () => {
    const user = newUser();
    const quiz = await insertQuiz(svc.db, { questions: 3 });
    const started = await restStart(user, quiz.quizId);
    const [q1, q2] = quiz.questionIds as [string, string, string];
    await insertAnswer(svc.db, {
      sessionId: started.body.id,
      questionId: q1,
      userAnswer: "A1",
      isCorrect: true,
      answeredAt: new Date(Date.now() - 2000),
    });
    await insertAnswer(svc.db, {
      sessionId: started.body.id,
      questionId: q2,
      userAnswer: "nope",
      isCorrect: false,
      answeredAt: new Date(Date.now() - 1000),
    });

    await svc.db.deleteFrom("questions").where("id", "=", q1).execute();

    const resumed = await restStart(user, quiz.quizId);
    expect(resumed.status).toBe(200);
    expect(resumed.body.total_questions).toBe(3);
    expect(resumed.body.answers).toMatchObject([
      { question_id: null, user_answer: "A1", is_correct: true },
      { question_id: q2, user_answer: "nope", is_correct: false },
    ]);
    expect(await snapshotOf(svc.db, started.body.id)).toEqual([
      { position: 1, question_id: null },
      { position: 2, question_id: q2 },
      { position: 3, question_id: quiz.questionIds[2] },
    ]);
  });

  it("resumes the in-progress session: 200, same id, answers oldest first, no new snapshot", async () => {
    const user = newUser();
    const quiz = await insertQuiz(svc.db, { questions: 3 });
    const started = await restStart(user, quiz.quizId);
    const [q1, q2, q3] = quiz.questionIds as [string, string, string];
    const t = Date.now();
    // Inserted out of order: the response must sort by answered_at.
    await insertAnswer(svc.db, {
      sessionId: started.body.id,
      questionId: q3,
      userAnswer: "x",
      isCorrect: false,
      answeredAt: new Date(t - 1000),
    });
    await insertAnswer(svc.db, {
      sessionId: started.body.id,
      questionId: q1,
      userAnswer: "A1",
      isCorrect: true,
      answeredAt: new Date(t - 3000),
    });
    await insertAnswer(svc.db, {
      sessionId: started.body.id,
      questionId: q2,
      userAnswer: "A2",
      isCorrect: true,
      answeredAt: new Date(t - 2000),
    });
    const snapshotRowsBefore = await countRows(svc.db, "practice_session_questions");

    const resumed = await restStart(user, quiz.quizId);
    expect(resumed.status).toBe(200);
    expect(resumed.location).toBeNull();
    expect(resumed.body.id).toBe(started.body.id);
    expect(resumed.body.answers).toEqual([
      {
        question_id: q1,
        user_answer: "A1",
        is_correct: true,
        answered_at: new Date(t - 3000).toISOString(),
      },
      {
        question_id: q2,
        user_answer: "A2",
        is_correct: true,
        answered_at: new Date(t - 2000).toISOString(),
      },
      {
        question_id: q3,
        user_answer: "x",
        is_correct: false,
        answered_at: new Date(t - 1000).toISOString(),
      },
    ]);
    expect(await countRows(svc.db, "practice_session_questions")).toBe(snapshotRowsBefore);

    const grpc = await svc.rpc.startSession(
      { quizId: quiz.quizId },
      { headers: await svc.auth(user) },
    );
    expect(grpc.created).toBe(false);
    expect(grpc.session?.id).toBe(started.body.id);
    expect(grpc.session?.answers.map((a) => a.questionId)).toEqual([q1, q2, q3]);
    expect(grpc.session?.scorePercentage).toBeUndefined();
    expect(grpc.session?.completedAt).toBeUndefined();
  });

  it("over RPC and Connect says created=true for a new session", async () => {
    const quiz = await insertQuiz(svc.db);
    const grpc = await svc.rpc.startSession(
      { quizId: quiz.quizId },
      { headers: await svc.auth(newUser()) },
    );
    expect(grpc.created).toBe(true);
    expect(grpc.session?.totalQuestions).toBe(3);
    expect(grpc.session?.answers).toEqual([]);

    const connect = await svc.rpc.startSession(
      { quizId: quiz.quizId },
      { headers: await svc.auth(newUser()) },
    );
    expect(connect.created).toBe(true);
    expect(connect.session?.id).not.toBe(grpc.session?.id);
  });

  it("keeps users apart: another user's start creates a session of its own", async () => {
    const quiz = await insertQuiz(svc.db);
    const a = await restStart("alice", quiz.quizId);
    const b = await restStart("Alice", quiz.quizId);
    expect(a.status).toBe(201);
    expect(b.status).toBe(201);
    expect(b.body.id).not.toBe(a.body.id);
  });

  it("when 50 starts by one user race over REST, Connect and gRPC, one creates and 49 resume the same id", async () => {
    const user = newUser();
    const quiz = await insertQuiz(svc.db, { questions: 5 });
    const headers = await svc.auth(user);
    const calls = Array.from({ length: 50 }, (_, i) => {
      switch (i % 3) {
        case 0:
          return restStart(user, quiz.quizId).then((r) => ({
            created: r.status === 201,
            ok: r.status === 201 || r.status === 200,
            id: r.body.id as string,
          }));
        case 1:
          return svc.rpc
            .startSession({ quizId: quiz.quizId }, { headers })
            .then((r) => ({ created: r.created, ok: true, id: r.session?.id ?? "" }));
        default:
          return svc.rpc
            .startSession({ quizId: quiz.quizId }, { headers })
            .then((r) => ({ created: r.created, ok: true, id: r.session?.id ?? "" }));
      }
    });
    const results = await Promise.all(calls);

    expect(results.every((r) => r.ok)).toBe(true);
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect(new Set(results.map((r) => r.id)).size).toBe(1);
    const rows = await svc.db
      .selectFrom("practice_sessions")
      .selectAll()
      .where("user_id", "=", user)
      .execute();
    expect(rows).toHaveLength(1);
    expect(await snapshotOf(svc.db, rows[0]?.id ?? "")).toHaveLength(5);
  });

  it("refuses a second in-progress row at the database: the unique key holds", async () => {
    const user = newUser();
    const quiz = await insertQuiz(svc.db);
    const started = await restStart(user, quiz.quizId);
    const duplicate = await insertSessions(svc.db, [
      {
        id: "00000000-0000-7000-8000-000000000001",
        userId: user,
        quizId: quiz.quizId,
        startedAt: new Date(),
      },
    ]).catch((err: unknown) => err);
    expect(isDuplicateKey(duplicate, ONE_ACTIVE_SESSION_KEY)).toBe(true);
    // A completed one is fine.
    await insertSessions(svc.db, [
      {
        id: "00000000-0000-7000-8000-000000000002",
        userId: user,
        quizId: quiz.quizId,
        startedAt: new Date(),
        completedAt: new Date(),
      },
    ]);
    expect(started.status).toBe(201);
  });
});
