import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { insertQuiz, type QuizFixture } from "../support/fixtures.js";
import { startTestService, type TestService } from "../support/service.js";

// A caller without a valid token is known by its address; behind a reverse
// proxy that is the proxy's, so one client's refusals would pace everyone
// (ops/refusal-pace.ts: 20 at once, then each held 1 s). With TRUST_PROXY
// naming the proxy, the address comes from its X-Forwarded-For.

const CLIENT_A = "203.0.113.1";
const CLIENT_B = "203.0.113.2";

/**
 * How many of B's 25 refused calls are answered at once (within 600 ms,
 * far below the 1 s hold) right after A has used up its burst of 20: about
 * 20 when B has refusals of its own; when it shares A's, only what the
 * bucket refills meanwhile (10 a second).
 */
async function bAnsweredAtOnce(svc: TestService, quiz: QuizFixture): Promise<number> {
  const refuse = (client: string) => {
    const started = performance.now();
    return svc
      .rest(null, "GET", `/quizzes/${quiz.quizId}/sessions`, {
        headers: { authorization: "Bearer not.a.token", "x-forwarded-for": client },
      })
      .then((res) => {
        expect(res.status).toBe(401);
        return performance.now() - started;
      });
  };
  // A's burst, all answered at once: its allowance is spent (and, shared, B's).
  await Promise.all(Array.from({ length: 20 }, () => refuse(CLIENT_A)));
  const times = await Promise.all(Array.from({ length: 25 }, () => refuse(CLIENT_B)));
  return times.filter((ms) => ms < 600).length;
}

describe("TRUST_PROXY", () => {
  let trusting: TestService;
  let direct: TestService;
  let oneHop: TestService;
  let quiz: QuizFixture;
  let directQuiz: QuizFixture;

  beforeAll(async () => {
    trusting = await startTestService({ trustProxy: ["127.0.0.1", "::1"] });
    direct = await startTestService();
    oneHop = await startTestService({ trustProxy: 1 });
    quiz = await insertQuiz(trusting.db);
    directQuiz = await insertQuiz(direct.db);
  });

  afterAll(async () => {
    await trusting?.close();
    await direct?.close();
    await oneHop?.close();
  });

  it("trusting the proxy: each forwarded client has refusals of its own", async () => {
    expect(await bAnsweredAtOnce(trusting, quiz)).toBeGreaterThanOrEqual(15);
  });

  it("a hop count: the address one hop back, each forwarded client on its own", async () => {
    expect(await bAnsweredAtOnce(oneHop, await insertQuiz(oneHop.db))).toBeGreaterThanOrEqual(15);
  });

  it("off (the default): X-Forwarded-For is ignored, and callers behind one address share it", async () => {
    expect(await bAnsweredAtOnce(direct, directQuiz)).toBeLessThanOrEqual(5);
  });
});
