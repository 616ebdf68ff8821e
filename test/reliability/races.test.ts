import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Admission } from "../../src/ops/admission.js";
import { insertQuestion, insertQuiz } from "../support/fixtures.js";
import {
  auditOf,
  expectOneWinner,
  installSessionAudit,
  raceFigures,
  raceStarts,
  staleSessionFixture,
} from "../support/races.js";
import {
  integrityViolations,
  NO_VIOLATIONS,
  percentile,
  reportFigures,
  startVia,
  TRANSPORTS,
} from "../support/reliability.js";
import { RACE_ADMISSION, startTestService, type TestService } from "../support/service.js";

let svc: TestService;

beforeAll(async () => {
  // Races need every racer admitted: a queue as deep as the largest race.
  svc = await startTestService({ admission: new Admission(RACE_ADMISSION) });
  await installSessionAudit(svc.db);
});
afterAll(async () => {
  await svc?.close();
});

describe("racing starts", () => {
  it("200 simultaneous starts by one user over REST, Connect, gRPC-Web and gRPC: one creation, 199 resumes of the same id", async () => {
    const user = "racer";
    const quiz = await insertQuiz(svc.db, { questions: 6 });
    const { outcomes, wallMs } = await raceStarts(svc, user, quiz.quizId, 200);
    reportFigures("race 200 starts, one user", raceFigures(outcomes, wallMs));

    const id = await expectOneWinner(svc, user, outcomes);
    expect(await auditOf(svc.db, user)).toEqual([{ op: "insert", session_id: id }]);
  });

  it("200 simultaneous starts over an 8-day-old session: it is deleted once, exactly one new session appears", async () => {
    const user = "stale-racer";
    const { quiz, staleId } = await staleSessionFixture(svc, user);
    const { outcomes, wallMs } = await raceStarts(svc, user, quiz.quizId, 200);
    reportFigures("race 200 starts over a stale session", raceFigures(outcomes, wallMs));

    const id = await expectOneWinner(svc, user, outcomes);
    expect(id).not.toBe(staleId);
    expect(await auditOf(svc.db, user)).toEqual([
      { op: "insert", session_id: staleId }, // the fixture
      { op: "delete", session_id: staleId },
      { op: "insert", session_id: id },
    ]);
    const answers = await svc.db
      .selectFrom("practice_session_answers")
      .select("id")
      .where("session_id", "=", staleId)
      .execute();
    expect(answers).toEqual([]);
  });

  it("50 users starting on one quiz at once get 50 sessions, each with the full snapshot", async () => {
    const quiz = await insertQuiz(svc.db, { questions: 10 });
    const users = Array.from({ length: 50 }, (_, i) => `crowd-${i}`);
    await Promise.all(users.map((u) => svc.auth(u)));
    const t0 = performance.now();
    const outcomes = await Promise.all(
      users.map((u, i) =>
        startVia(svc, TRANSPORTS[i % TRANSPORTS.length] ?? "rest", u, quiz.quizId),
      ),
    );
    const wallMs = Math.round(performance.now() - t0);
    reportFigures("50 users start at once", {
      wallMs,
      p50Ms: percentile(
        outcomes.map((o) => o.ms),
        50,
      ),
      p99Ms: percentile(
        outcomes.map((o) => o.ms),
        99,
      ),
    });

    expect(outcomes.every((o) => o.code === "ok" && o.created)).toBe(true);
    expect(new Set(outcomes.map((o) => o.id)).size).toBe(50);
    const snapshots = await svc.db
      .selectFrom("practice_session_questions")
      .innerJoin(
        "practice_sessions",
        "practice_sessions.id",
        "practice_session_questions.session_id",
      )
      .select(["session_id", "position", "question_id"])
      .where("practice_sessions.quiz_id", "=", quiz.quizId)
      .orderBy("session_id")
      .orderBy("position")
      .execute();
    const bySession = new Map<string, (string | null)[]>();
    for (const r of snapshots)
      bySession.set(r.session_id, [...(bySession.get(r.session_id) ?? []), r.question_id]);
    expect(bySession.size).toBe(50);
    for (const questionIds of bySession.values()) expect(questionIds).toEqual(quiz.questionIds);
    expect(await integrityViolations(svc.db)).toEqual(NO_VIOLATIONS);
  });

  it("keeps every snapshot whole while the quiz's questions change under 40 racing starts", async () => {
    const quiz = await insertQuiz(svc.db, { questions: 5 });
    const users = Array.from({ length: 40 }, (_, i) => `editor-race-${i}`);
    await Promise.all(users.map((u) => svc.auth(u)));
    let position = 100;
    const edits = (async () => {
      for (let i = 0; i < 20; i++) {
        await insertQuestion(svc.db, quiz.quizId, position++);
        const victim = await svc.db
          .selectFrom("questions")
          .select("id")
          .where("quiz_id", "=", quiz.quizId)
          .orderBy("id")
          .limit(1)
          .executeTakeFirst();
        if (victim && i % 2 === 0)
          await svc.db.deleteFrom("questions").where("id", "=", victim.id).execute();
      }
    })();
    const outcomes = await Promise.all(
      users.map((u, i) =>
        startVia(svc, TRANSPORTS[i % TRANSPORTS.length] ?? "rest", u, quiz.quizId),
      ),
    );
    await edits;
    expect(outcomes.filter((o) => o.code !== "ok")).toEqual([]);
    // total_questions == snapshot rows, positions 1..n, for every session.
    expect(await integrityViolations(svc.db)).toEqual(NO_VIOLATIONS);
  });
});
