import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Admission } from "../../src/ops/admission.js";
import { insertQuiz } from "../support/fixtures.js";
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
  type Outcome,
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

describe("racing starts, repeated", () => {
  it("10 rounds of 200 simultaneous starts by one user: one creation each time", async () => {
    const all: Outcome[] = [];
    const walls: number[] = [];
    for (let round = 0; round < 10; round++) {
      const user = `round-${round}`;
      const quiz = await insertQuiz(svc.db, { questions: 6 });
      const { outcomes, wallMs } = await raceStarts(svc, user, quiz.quizId, 200);
      const id = await expectOneWinner(svc, user, outcomes);
      expect(await auditOf(svc.db, user)).toEqual([{ op: "insert", session_id: id }]);
      all.push(...outcomes);
      walls.push(wallMs);
    }
    reportFigures("10 x 200 racing starts", {
      ...raceFigures(all, Math.max(...walls)),
      wallMsEach: walls,
    });
  });

  it("10 rounds of 200 simultaneous starts over an 8-day-old session: deleted once, one new session", async () => {
    const all: Outcome[] = [];
    for (let round = 0; round < 10; round++) {
      const user = `stale-round-${round}`;
      const { quiz, staleId } = await staleSessionFixture(svc, user);
      const { outcomes } = await raceStarts(svc, user, quiz.quizId, 200);
      const id = await expectOneWinner(svc, user, outcomes);
      expect(await auditOf(svc.db, user)).toEqual([
        { op: "insert", session_id: staleId },
        { op: "delete", session_id: staleId },
        { op: "insert", session_id: id },
      ]);
      all.push(...outcomes);
    }
    reportFigures("10 x 200 racing starts over a stale session", raceFigures(all, 0));
  });

  it("200 users starting on one quiz at once, each 3 times: 200 sessions, 400 resumes, full snapshots", async () => {
    const quiz = await insertQuiz(svc.db, { questions: 20 });
    const users = Array.from({ length: 200 }, (_, i) => `crowd-${i}`);
    await Promise.all(users.map((u) => svc.auth(u)));
    const t0 = performance.now();
    const outcomes = await Promise.all(
      [...users, ...users, ...users].map((u, i) =>
        startVia(svc, TRANSPORTS[i % TRANSPORTS.length] ?? "rest", u, quiz.quizId),
      ),
    );
    reportFigures("200 users x 3 starts at once", {
      wallMs: Math.round(performance.now() - t0),
      p50Ms: percentile(
        outcomes.map((o) => o.ms),
        50,
      ),
      p99Ms: percentile(
        outcomes.map((o) => o.ms),
        99,
      ),
    });
    expect(outcomes.filter((o) => o.code !== "ok")).toEqual([]);
    expect(outcomes.filter((o) => o.created)).toHaveLength(200);
    expect(new Set(outcomes.map((o) => o.id)).size).toBe(200);
    expect(await integrityViolations(svc.db)).toEqual(NO_VIOLATIONS);
  });
});
