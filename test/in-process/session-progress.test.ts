import { timestampDate } from "@bufbuild/protobuf/wkt";
import { Code, type ConnectError } from "@connectrpc/connect";
import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import type { PageJson } from "../../src/rest/schemas.js";
import { countRows, insertQuiz } from "../support/fixtures.js";
import { fileService, userNames } from "../support/in-process.js";
import { restCalls } from "../support/rest-calls.js";

const svc = await fileService();
const newUser = userNames("progress");
const DAY = 86_400_000;
const WEEK = 7 * DAY;

const { rest, start, answer, complete, get } = restCalls(() => svc);

/** The session row's answered_questions and the number of its answer rows. */
async function stored(sessionId: string) {
  const row = await svc.db
    .selectFrom("practice_sessions")
    .select(["answered_questions", "correct_answers", "completed_at"])
    .where("id", "=", sessionId)
    .executeTakeFirstOrThrow();
  const { rows } = await sql<{
    n: number;
  }>`SELECT COUNT(*) AS n FROM practice_session_answers WHERE session_id = ${sessionId}`.execute(
    svc.db,
  );
  return { ...row, answerRows: Number(rows[0]?.n ?? 0) };
}

describe("StartSession returns the snapshot beside the session", () => {
  it("over REST, on create (201) and on resume (200), without correct answers", async () => {
    const user = newUser();
    const quiz = await insertQuiz(svc.db, { questions: 3 });
    const snapshot = quiz.questionIds.map((id, i) => ({
      position: i + 1,
      question_id: id,
      correct_answer: null,
    }));
    const created = await start(user, quiz.quizId);
    expect(created.status).toBe(201);
    expect(created.body.questions).toEqual(snapshot);
    await answer(user, created.body.id, quiz.questionIds[0] ?? "", "A1");
    const resumed = await start(user, quiz.quizId);
    expect(resumed.status).toBe(200);
    expect(resumed.body.questions).toEqual(snapshot);
    expect(resumed.body.answers).toHaveLength(1);
  });

  it("over RPC, on create and on resume", async () => {
    const headers = await svc.auth(newUser());
    const quiz = await insertQuiz(svc.db, { questions: 2 });
    const expected = quiz.questionIds.map((id, i) => ({ position: i + 1, questionId: id }));
    for (const created of [true, false]) {
      const res = await svc.rpc.startSession({ quizId: quiz.quizId }, { headers });
      expect(res.created).toBe(created);
      expect(
        res.questions.map((q) => ({ position: q.position, questionId: q.questionId })),
      ).toEqual(expected);
      expect(res.questions.every((q) => q.correctAnswer === undefined)).toBe(true);
    }
  });
});

describe("answered_questions and expires_at", () => {
  it("over REST: every answer, right or wrong, counts in the session row, in every session object", async () => {
    const user = newUser();
    const quiz = await insertQuiz(svc.db, { questions: 3 });
    const [q1, q2] = quiz.questionIds as [string, string];
    const started = await start(user, quiz.quizId);
    const id = started.body.id;
    const expiry = new Date(new Date(started.body.started_at).getTime() + WEEK).toISOString();
    expect(started.body).toMatchObject({ answered_questions: 0, expires_at: expiry });

    const wrong = await answer(user, id, q1, "wrong");
    expect(wrong.status).toBe(201);
    expect(wrong.body.session).toMatchObject({
      answered_questions: 1,
      correct_answers: 0,
      expires_at: expiry,
    });
    expect(await stored(id)).toMatchObject({ answered_questions: 1, answerRows: 1 });
    const right = await answer(user, id, q2, "A2");
    expect(right.body.session).toMatchObject({ answered_questions: 2, correct_answers: 1 });
    expect(await stored(id)).toMatchObject({
      answered_questions: 2,
      correct_answers: 1,
      answerRows: 2,
    });
    // Refused answers and retries count nothing.
    expect((await answer(user, id, q2, "B2")).status).toBe(409);
    expect((await answer(user, id, q2, "A2")).status).toBe(200);
    expect(await stored(id)).toMatchObject({ answered_questions: 2, answerRows: 2 });

    expect((await get(user, id)).body).toMatchObject({ answered_questions: 2, expires_at: expiry });
    expect((await start(user, quiz.quizId)).body).toMatchObject({ answered_questions: 2 });
    const page = await rest<PageJson>(user, "GET", `/quizzes/${quiz.quizId}/sessions`);
    expect(page.body.sessions[0]).toMatchObject({ id, answered_questions: 2, expires_at: expiry });

    const done = await complete(user, id);
    expect(done.body).toMatchObject({ answered_questions: 2, expires_at: null });
    const history = await rest<PageJson>(user, "GET", `/quizzes/${quiz.quizId}/sessions`);
    expect(history.body.sessions[0]).toMatchObject({ answered_questions: 2, expires_at: null });
  });

  it("over RPC: answered_questions in every response, expires_at set while in progress only", async () => {
    const headers = await svc.auth(newUser());
    const quiz = await insertQuiz(svc.db, { questions: 2 });
    const [q1, q2] = quiz.questionIds as [string, string];
    const { session } = await svc.rpc.startSession({ quizId: quiz.quizId }, { headers });
    const sessionId = session?.id ?? "";
    const startedAt = session?.startedAt ? timestampDate(session.startedAt).getTime() : 0;
    expect(session?.answeredQuestions).toBe(0);
    expect(session?.expiresAt && timestampDate(session.expiresAt).getTime()).toBe(startedAt + WEEK);
    const first = await svc.rpc.submitAnswer(
      { sessionId, questionId: q1, userAnswer: "nope" },
      { headers },
    );
    expect(first.session?.answeredQuestions).toBe(1);
    await svc.rpc.submitAnswer({ sessionId, questionId: q2, userAnswer: "a2" }, { headers });
    const detail = await svc.rpc.getSession({ sessionId }, { headers });
    expect(detail.session?.answeredQuestions).toBe(2);
    const list = await svc.rpc.listSessions({ quizId: quiz.quizId }, { headers });
    expect(list.sessions[0]?.answeredQuestions).toBe(2);
    const done = await svc.rpc.completeSession({ sessionId }, { headers });
    expect(done.session?.answeredQuestions).toBe(2);
    expect(done.session?.expiresAt).toBeUndefined();
    expect(await stored(sessionId)).toMatchObject({ answered_questions: 2, answerRows: 2 });
  });
});

describe("review: GetSession's correct answers", () => {
  it("over REST: null while in progress; once completed, each question's current correct answer, null for a deleted one", async () => {
    const user = newUser();
    const quiz = await insertQuiz(svc.db, { questions: 3 });
    const [q1, q2, q3] = quiz.questionIds as [string, string, string];
    const { body: s } = await start(user, quiz.quizId);
    await answer(user, s.id, q1, "A1");
    const during = await get(user, s.id);
    expect(during.body.questions.map((q) => q.correct_answer)).toEqual([null, null, null]);

    await complete(user, s.id);
    // Edited and deleted after completion: the review shows the quiz as it is now.
    await svc.db
      .updateTable("questions")
      .set({ correct_answer: "A2 (edited)" })
      .where("id", "=", q2)
      .execute();
    await sql`DELETE FROM questions WHERE id = ${q3}`.execute(svc.db);
    const review = await get(user, s.id);
    expect(review.body.questions).toEqual([
      { position: 1, question_id: q1, correct_answer: "A1" },
      { position: 2, question_id: q2, correct_answer: "A2 (edited)" },
      { position: 3, question_id: null, correct_answer: null },
    ]);
  });

  it("over RPC: unset while in progress, set once completed", async () => {
    const headers = await svc.auth(newUser());
    const quiz = await insertQuiz(svc.db, { questions: 2 });
    const { session } = await svc.rpc.startSession({ quizId: quiz.quizId }, { headers });
    const sessionId = session?.id ?? "";
    const during = await svc.rpc.getSession({ sessionId }, { headers });
    expect(during.questions.map((q) => q.correctAnswer)).toEqual([undefined, undefined]);
    await svc.rpc.completeSession({ sessionId }, { headers });
    const review = await svc.rpc.getSession({ sessionId }, { headers });
    expect(review.questions.map((q) => q.correctAnswer)).toEqual(["A1", "A2"]);
  });
});

describe("an expired session refuses writes", () => {
  /** A session of `user` on a new quiz, started now (the fake clock's now). */
  async function session(user: string) {
    const quiz = await insertQuiz(svc.db, { questions: 3 });
    const { body } = await start(user, quiz.quizId);
    return { quiz, id: body.id, questionIds: quiz.questionIds as [string, string, string] };
  }

  const writes = async () => [
    await countRows(svc.db, "practice_sessions"),
    await countRows(svc.db, "practice_session_answers"),
    (
      await sql<{
        n: number;
      }>`SELECT COALESCE(SUM(answered_questions), 0) + COALESCE(SUM(correct_answers), 0)
        + COUNT(completed_at) AS n FROM practice_sessions`.execute(svc.db)
    ).rows[0]?.n,
  ];

  it("over REST: exactly 7 days after the start it still takes answers and completion", async () => {
    const user = newUser();
    const answering = await session(user);
    const completing = await session(user);
    svc.clock.advance(WEEK);
    try {
      expect((await answer(user, answering.id, answering.questionIds[0], "A1")).status).toBe(201);
      expect((await complete(user, completing.id)).status).toBe(200);
    } finally {
      svc.clock.advance(-WEEK);
    }
  });

  it("over REST: a millisecond later, answer and complete are 400 failed_precondition, writing nothing", async () => {
    const user = newUser();
    const s = await session(user);
    await answer(user, s.id, s.questionIds[0], "A1");
    svc.clock.advance(WEEK + 1);
    try {
      const before = await writes();
      const refusedAnswer = await answer(user, s.id, s.questionIds[1], "A2");
      const refusedComplete = await complete(user, s.id);
      // A retry of an answer stored before the expiry is still told it is stored.
      expect((await answer(user, s.id, s.questionIds[0], "A1")).status).toBe(200);
      for (const res of [refusedAnswer, refusedComplete]) {
        expect(res.status).toBe(400);
        expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
        expect(res.body).toMatchObject({
          type: "about:blank",
          title: "Bad Request",
          status: 400,
          code: "failed_precondition",
        });
        expect(res.body.detail).toMatch(/expired/);
        expect(res.body.detail).toMatch(/start the quiz again/);
      }
      expect(await writes()).toEqual(before);
      expect(await stored(s.id)).toMatchObject({ answered_questions: 1, completed_at: null });
      // GetSession still shows it, expired; the next start replaces it.
      const shown = await get(user, s.id);
      expect(shown.status).toBe(200);
      expect(new Date(shown.body.expires_at ?? 0).getTime()).toBeLessThan(
        svc.clock.now().getTime(),
      );
      const again = await start(user, s.quiz.quizId);
      expect(again.status).toBe(201);
      expect(again.body.id).not.toBe(s.id);
      expect((await get(user, s.id)).status).toBe(404);
    } finally {
      svc.clock.advance(-(WEEK + 1));
    }
  });

  it("over RPC: FAILED_PRECONDITION after 7 days, accepted at exactly 7 days", async () => {
    const user = newUser();
    const s = await session(user);
    svc.clock.advance(WEEK);
    try {
      // A token for the moved clock: one signed a week earlier would have expired.
      const headers = await svc.auth(user);
      const ok = await svc.rpc.submitAnswer(
        { sessionId: s.id, questionId: s.questionIds[0], userAnswer: "A1" },
        { headers },
      );
      expect(ok.session?.answeredQuestions).toBe(1);
      svc.clock.advance(1);
      const before = await writes();
      const refusedAnswer = await svc.rpc
        .submitAnswer(
          { sessionId: s.id, questionId: s.questionIds[1], userAnswer: "A2" },
          { headers },
        )
        .catch((e: ConnectError) => e);
      const refusedComplete = await svc.rpc
        .completeSession({ sessionId: s.id }, { headers })
        .catch((e: ConnectError) => e);
      for (const err of [refusedAnswer, refusedComplete]) {
        expect((err as ConnectError).code).toBe(Code.FailedPrecondition);
        expect((err as ConnectError).rawMessage).toMatch(/expired.*start the quiz again/);
      }
      expect(await writes()).toEqual(before);
    } finally {
      svc.clock.advance(-(WEEK + 1));
    }
  });
});
