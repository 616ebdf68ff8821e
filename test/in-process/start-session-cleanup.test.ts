import { Code, ConnectError } from "@connectrpc/connect";
import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import { STALE_AFTER_MS } from "../../src/domain/session.js";
import {
  countRows,
  insertAnswer,
  insertQuiz,
  insertSessions,
  snapshotOf,
} from "../support/fixtures.js";
import { fileService, userNames } from "../support/in-process.js";
import { restCalls } from "../support/rest-calls.js";

const svc = await fileService();
const newUser = userNames("user");

const { startWithLocation: restStart } = restCalls(() => svc);

describe("stale cleanup on start", () => {
  async function startAt(user: string, quizId: string, at: Date) {
    svc.clock.set(at);
    return restStart(user, quizId);
  }

  it("deletes an in-progress session older than 7 days, with its snapshot and answers, and creates a fresh one", async () => {
    const user = newUser();
    const quiz = await insertQuiz(svc.db, { questions: 2 });
    const t0 = new Date();
    const old = await startAt(user, quiz.quizId, t0);
    await insertAnswer(svc.db, {
      sessionId: old.body.id,
      questionId: quiz.questionIds[0] ?? "",
      userAnswer: "A1",
      isCorrect: true,
      answeredAt: t0,
    });

    const fresh = await startAt(user, quiz.quizId, new Date(t0.getTime() + STALE_AFTER_MS + 1));

    expect(fresh.status).toBe(201);
    expect(fresh.body.id).not.toBe(old.body.id);
    expect(fresh.body.answers).toEqual([]);
    const left = await svc.db
      .selectFrom("practice_sessions")
      .select("id")
      .where("user_id", "=", user)
      .execute();
    expect(left.map((r) => r.id)).toEqual([fresh.body.id]);
    expect(await snapshotOf(svc.db, old.body.id)).toEqual([]);
    const answers = await svc.db
      .selectFrom("practice_session_answers")
      .select("id")
      .where("session_id", "=", old.body.id)
      .execute();
    expect(answers).toEqual([]);
  });

  it("keeps a session exactly 7 days old: the start resumes it", async () => {
    const user = newUser();
    const quiz = await insertQuiz(svc.db);
    const t0 = new Date();
    const old = await startAt(user, quiz.quizId, t0);
    const again = await startAt(user, quiz.quizId, new Date(t0.getTime() + STALE_AFTER_MS));
    expect(again.status).toBe(200);
    expect(again.body.id).toBe(old.body.id);
  });

  it("never deletes completed sessions, however old", async () => {
    const user = newUser();
    const quiz = await insertQuiz(svc.db);
    const longAgo = new Date(Date.now() - 30 * STALE_AFTER_MS);
    await insertSessions(svc.db, [
      {
        id: "00000000-0000-7000-8000-0000000000c1",
        userId: user,
        quizId: quiz.quizId,
        startedAt: longAgo,
        completedAt: longAgo,
      },
    ]);
    const started = await startAt(user, quiz.quizId, new Date());
    expect(started.status).toBe(201);
    const rows = await svc.db
      .selectFrom("practice_sessions")
      .select("id")
      .where("user_id", "=", user)
      .execute();
    expect(rows).toHaveLength(2);
  });

  it("only touches the caller's session on that quiz", async () => {
    const quiz = await insertQuiz(svc.db);
    const other = await insertQuiz(svc.db);
    const t0 = new Date();
    const bob = await startAt("bob-stale", quiz.quizId, t0);
    const mine = await startAt("carol-stale", other.quizId, t0);
    await startAt("carol-stale", quiz.quizId, new Date(t0.getTime() + STALE_AFTER_MS + 1));
    const ids = await svc.db
      .selectFrom("practice_sessions")
      .select("id")
      .where("id", "in", [bob.body.id, mine.body.id])
      .execute();
    expect(ids).toHaveLength(2);
  });
});

describe("start errors", () => {
  it.each([
    ["a missing quiz", async () => "987654321"],
    ["a soft-deleted quiz", async () => (await insertQuiz(svc.db, { quizDeleted: true })).quizId],
    [
      "a quiz under a soft-deleted study guide",
      async () => (await insertQuiz(svc.db, { studyGuideDeleted: true })).quizId,
    ],
    ["a quiz id that names no quiz", async () => "not-a-number"],
    ["a quiz id past BIGINT UNSIGNED", async () => "18446744073709551616"],
  ])("is 404 not_found for %s, with the same body, and writes nothing", async (_name, quizIdOf) => {
    const quizId = await quizIdOf();
    const before = await countRows(svc.db, "practice_sessions");
    const res = await svc.rest(newUser(), "POST", `/quizzes/${quizId}/sessions`);
    expect(res.status).toBe(404);
    expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    expect(await res.text()).toBe(
      '{"type":"about:blank","title":"Not Found","status":404,"detail":"quiz not found","code":"not_found"}',
    );
    await expect(
      svc.rpc.startSession({ quizId }, { headers: await svc.auth(newUser()) }),
    ).rejects.toMatchObject({ code: 5 });
    expect(await countRows(svc.db, "practice_sessions")).toBe(before);
  });

  it("is failed_precondition (400) for a live quiz with no questions, and writes nothing", async () => {
    const quiz = await insertQuiz(svc.db, { questions: 0 });
    const before = await countRows(svc.db, "practice_sessions");
    const res = await svc.rest(newUser(), "POST", `/quizzes/${quiz.quizId}/sessions`);
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ status: 400, code: "failed_precondition" });
    const err = await svc.rpc
      .startSession({ quizId: quiz.quizId }, { headers: await svc.auth(newUser()) })
      .catch((e) => e);
    expect(ConnectError.from(err).code).toBe(Code.FailedPrecondition);
    await expect(
      svc.rpc.startSession({ quizId: quiz.quizId }, { headers: await svc.auth(newUser()) }),
    ).rejects.toMatchObject({ code: 9 });
    expect(await countRows(svc.db, "practice_sessions")).toBe(before);
  });

  it.each([
    ["a JSON array", "[]", "application/json"],
    ["a JSON string", '"x"', "application/json"],
    ["broken JSON", "{", "application/json"],
    // A text/plain body is 415: test/integration/content-type.test.ts.
  ])("is 400 for a body that is %s", async (_name, body, type) => {
    const quiz = await insertQuiz(svc.db);
    const res = await svc.rest(newUser(), "POST", `/quizzes/${quiz.quizId}/sessions`, {
      body,
      headers: { "content-type": type },
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ code: "invalid_argument" });
  });

  it("accepts an empty JSON body and {}", async () => {
    const quiz = await insertQuiz(svc.db);
    const user = newUser();
    const empty = await svc.rest(user, "POST", `/quizzes/${quiz.quizId}/sessions`, {
      body: "",
      headers: { "content-type": "application/json" },
    });
    const object = await svc.rest(user, "POST", `/quizzes/${quiz.quizId}/sessions`, {
      body: "{}",
      headers: { "content-type": "application/json" },
    });
    expect([empty.status, object.status]).toEqual([201, 200]);
  });
});

describe("the schema", () => {
  it("deletes a session's snapshot and answers with it (ON DELETE CASCADE)", async () => {
    const quiz = await insertQuiz(svc.db);
    const started = await restStart(newUser(), quiz.quizId);
    await insertAnswer(svc.db, {
      sessionId: started.body.id,
      questionId: quiz.questionIds[0] ?? "",
      userAnswer: "a",
      isCorrect: false,
      answeredAt: new Date(),
    });
    await svc.db.deleteFrom("practice_sessions").where("id", "=", started.body.id).execute();
    const { rows } = await sql<{ n: number }>`
      SELECT (SELECT COUNT(*) FROM practice_session_questions WHERE session_id = ${started.body.id})
           + (SELECT COUNT(*) FROM practice_session_answers WHERE session_id = ${started.body.id}) AS n`.execute(
      svc.db,
    );
    expect(Number(rows[0]?.n)).toBe(0);
  });
});
