import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Admission } from "../../../src/ops/admission.js";
import { countRows, insertQuestion, insertQuiz } from "../fixtures.js";
import {
  auditOf,
  expectOneWinner,
  installSessionAudit,
  raceFigures,
  raceStarts,
  staleSessionFixture,
} from "../races.js";
import {
  answerVia,
  completeVia,
  integrityViolations,
  NO_VIOLATIONS,
  type Outcome,
  percentile,
  reportFigures,
  startVia,
  TRANSPORTS,
} from "../reliability.js";
import { RACE_ADMISSION, startTestService, type TestService } from "../service.js";

/** How hard a run of the races suite pushes. */
export interface RaceScale {
  /** Rounds of each one-user race (a fresh quiz or stale session each round). */
  rounds: number;
  /** Simultaneous starts in each one-user race. */
  racers: number;
  /** Users starting on one quiz at once, each `startsEach` times. */
  crowd: number;
  startsEach: number;
  /** Questions of the crowd's quiz. */
  crowdQuestions: number;
  /** Starts racing edits of the quiz's questions. */
  editors: number;
}

/** `npm test` (test/reliability) and `npm run test:chaos` (test/chaos): one suite, two scales. */
export const RACES_FAST: RaceScale = {
  rounds: 1,
  racers: 200,
  crowd: 50,
  startsEach: 1,
  crowdQuestions: 10,
  editors: 40,
};
export const RACES_CHAOS: RaceScale = {
  rounds: 10,
  racers: 200,
  crowd: 200,
  startsEach: 3,
  crowdQuestions: 20,
  editors: 120,
};

/**
 * Racing starts over REST, Connect, gRPC-Web and gRPC at once (round-robin),
 * checked against an audit of every insert into and delete from
 * practice_sessions and the table integrity checks.
 */
export function racesSuite(scale: RaceScale) {
  let svc: TestService;
  beforeAll(async () => {
    // Races need every racer admitted: a queue as deep as the largest race.
    svc = await startTestService({ admission: new Admission(RACE_ADMISSION) });
    await installSessionAudit(svc.db);
  });
  afterAll(async () => {
    await svc?.close();
  });
  const times = scale.rounds > 1 ? `${scale.rounds} rounds of ` : "";

  describe("racing starts", () => {
    it(`${times}${scale.racers} simultaneous starts by one user over REST, Connect, gRPC-Web and gRPC: one creation, the rest resume the same id`, async () => {
      const all: Outcome[] = [];
      const walls: number[] = [];
      for (let round = 0; round < scale.rounds; round++) {
        const user = `racer-${round}`;
        const quiz = await insertQuiz(svc.db, { questions: 6 });
        const { outcomes, wallMs } = await raceStarts(svc, user, quiz.quizId, scale.racers);
        const id = await expectOneWinner(svc, user, outcomes);
        expect(await auditOf(svc.db, user)).toEqual([{ op: "insert", session_id: id }]);
        all.push(...outcomes);
        walls.push(wallMs);
      }
      reportFigures(`${times}${scale.racers} racing starts, one user`, {
        ...raceFigures(all, Math.max(...walls)),
        wallMsEach: walls,
      });
    });

    it(`${times}${scale.racers} simultaneous starts over an 8-day-old session: it is deleted once, exactly one new session appears`, async () => {
      const all: Outcome[] = [];
      for (let round = 0; round < scale.rounds; round++) {
        const user = `stale-racer-${round}`;
        const { quiz, staleId } = await staleSessionFixture(svc, user);
        const { outcomes, wallMs } = await raceStarts(svc, user, quiz.quizId, scale.racers);
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
        all.push(...outcomes);
        if (scale.rounds === 1)
          reportFigures("race starts over a stale session", raceFigures(outcomes, wallMs));
      }
      if (scale.rounds > 1)
        reportFigures(`${times}racing starts over a stale session`, raceFigures(all, 0));
    });

    it(`${scale.crowd} users starting on one quiz at once, ${scale.startsEach} time(s) each: ${scale.crowd} sessions, each with the full snapshot`, async () => {
      const quiz = await insertQuiz(svc.db, { questions: scale.crowdQuestions });
      const users = Array.from({ length: scale.crowd }, (_, i) => `crowd-${i}`);
      await Promise.all(users.map((u) => svc.auth(u)));
      const calls = Array.from({ length: scale.startsEach }, () => users).flat();
      const t0 = performance.now();
      const outcomes = await Promise.all(
        calls.map((u, i) =>
          startVia(svc, TRANSPORTS[i % TRANSPORTS.length] ?? "rest", u, quiz.quizId),
        ),
      );
      const ms = outcomes.map((o) => o.ms);
      reportFigures(`${scale.crowd} users x ${scale.startsEach} starts at once`, {
        wallMs: Math.round(performance.now() - t0),
        p50Ms: percentile(ms, 50),
        p99Ms: percentile(ms, 99),
      });

      expect(outcomes.filter((o) => o.code !== "ok")).toEqual([]);
      expect(outcomes.filter((o) => o.created)).toHaveLength(scale.crowd);
      expect(new Set(outcomes.map((o) => o.id)).size).toBe(scale.crowd);
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
      for (const r of snapshots) {
        bySession.set(r.session_id, [...(bySession.get(r.session_id) ?? []), r.question_id]);
      }
      expect(bySession.size).toBe(scale.crowd);
      for (const questionIds of bySession.values()) expect(questionIds).toEqual(quiz.questionIds);
      expect(await integrityViolations(svc.db)).toEqual(NO_VIOLATIONS);
    });

    it(`keeps every snapshot whole while the quiz's questions change under ${scale.editors} racing starts`, async () => {
      const quiz = await insertQuiz(svc.db, { questions: 5 });
      const users = Array.from({ length: scale.editors }, (_, i) => `editor-race-${i}`);
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
          if (victim && i % 2 === 0) {
            await svc.db.deleteFrom("questions").where("id", "=", victim.id).execute();
          }
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
  describe("racing retries", () => {
    const eventsOf = async (sessionId: string) =>
      (
        await svc.db
          .selectFrom("practice_outbox")
          .select("type")
          .where("session_id", "=", sessionId)
          .execute()
      ).map((e) => e.type);

    it(`${scale.racers} identical answers to one question over REST, Connect, gRPC-Web and gRPC: all succeed, one row, one event`, async () => {
      const user = "retry-answers";
      const quiz = await insertQuiz(svc.db, { questions: 3 });
      const started = await startVia(svc, "rest", user, quiz.quizId);
      const sessionId = started.id ?? "";
      const answer = { sessionId, questionId: quiz.questionIds[0] ?? "", userAnswer: "A1" };
      const answersBefore = await countRows(svc.db, "practice_session_answers");
      const outcomes = await Promise.all(
        Array.from({ length: scale.racers }, (_, i) =>
          answerVia(svc, TRANSPORTS[i % TRANSPORTS.length] ?? "rest", user, answer),
        ),
      );
      expect(outcomes.filter((o) => o.code !== "ok")).toEqual([]);
      expect(outcomes.filter((o) => o.created).length).toBeLessThanOrEqual(1);
      expect(await countRows(svc.db, "practice_session_answers")).toBe(answersBefore + 1);
      expect(await eventsOf(sessionId)).toEqual([
        "practice.session.started",
        "practice.answer.submitted",
      ]);
      reportFigures(`${scale.racers} racing identical answers`, raceFigures(outcomes, 0));
    });

    it(`${scale.racers} completions of one session over REST, Connect, gRPC-Web and gRPC: all get the same completed_at, one event`, async () => {
      const user = "retry-completions";
      const quiz = await insertQuiz(svc.db, { questions: 3 });
      const started = await startVia(svc, "rest", user, quiz.quizId);
      const sessionId = started.id ?? "";
      const outcomes = await Promise.all(
        Array.from({ length: scale.racers }, (_, i) =>
          completeVia(svc, TRANSPORTS[i % TRANSPORTS.length] ?? "rest", user, sessionId),
        ),
      );
      expect(outcomes.filter((o) => o.code !== "ok")).toEqual([]);
      expect(new Set(outcomes.map((o) => o.id)).size).toBe(1);
      expect(await eventsOf(sessionId)).toEqual([
        "practice.session.started",
        "practice.session.completed",
      ]);
      reportFigures(`${scale.racers} racing completions`, raceFigures(outcomes, 0));
    });
  });
}
