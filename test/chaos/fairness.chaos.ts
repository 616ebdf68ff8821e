import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clientProcess } from "../support/client-process.js";
import { insertQuiz, type QuizFixture } from "../support/fixtures.js";
import { sleep } from "../support/load.js";
import {
  listVia,
  type Outcome,
  percentile,
  reportFigures,
  type Transport,
  tally,
} from "../support/reliability.js";
import { startTestService, type TestService } from "../support/service.js";

let svc: TestService;
let quiz: QuizFixture;

beforeAll(async () => {
  // The service's own admission (a pool of 10: 20 waiting calls per caller).
  svc = await startTestService();
  quiz = await insertQuiz(svc.db);
});
afterAll(async () => {
  await svc?.close();
});

const LEARNERS = 20;

/** `count` loops of one call at a time each, by `user(i)` over `transport(i)`, until `ms` has passed. */
async function loops(
  count: number,
  ms: number,
  user: (i: number) => string,
  transport: (i: number) => Transport,
): Promise<Outcome[]> {
  const outcomes: Outcome[] = [];
  const until = performance.now() + ms;
  await Promise.all(
    Array.from({ length: count }, async (_, i) => {
      while (performance.now() < until) {
        outcomes.push(await listVia(svc, transport(i), user(i), quiz.quizId));
      }
    }),
  );
  return outcomes;
}

/** One user's `count` loops in a process of its own (test/support/greedy-client.ts). */
async function greedyUser(count: number, ms: number) {
  const token = await svc.token("heavy-user");
  return clientProcess<{ codes: Record<string, number>; refusalMs: number[] }>("greedy-client.ts", [
    svc.baseUrl,
    token,
    quiz.quizId,
    String(count),
    String(ms),
  ]).result;
}

const learners = (ms: number) =>
  loops(
    LEARNERS,
    ms,
    (i) => `learner-${i}`,
    (i) => (i % 2 === 0 ? "rest" : "grpc"),
  );

describe("one user cannot take the service from everyone else", () => {
  it("20 learners keep their calls beside one user running 300 concurrent REST and gRPC calls, whose excess is refused with 429 / RESOURCE_EXHAUSTED", async () => {
    const ALONE_MS = 4_000;
    const BUSY_MS = 6_000;
    const alone = await learners(ALONE_MS);
    const heavy = greedyUser(300, BUSY_MS + 1_000);
    await sleep(500);
    const beside = await learners(BUSY_MS);
    const greedy = await heavy;

    const ok = (o: Outcome[]) => o.filter((x) => x.code === "ok");
    const rate = (o: Outcome[], ms: number) => (ok(o).length / ms) * 1000;
    const p99 = (o: Outcome[]) =>
      percentile(
        ok(o).map((x) => x.ms),
        99,
      );
    const figures = {
      aloneCallsPerS: Math.round(rate(alone, ALONE_MS)),
      besideCallsPerS: Math.round(rate(beside, BUSY_MS)),
      aloneP99Ms: Math.round(p99(alone)),
      besideP99Ms: Math.round(p99(beside)),
      learnerCodes: tally(beside, (o) => o.code),
      heavyCodes: greedy.codes,
      refusalP50Ms: Math.round(percentile(greedy.refusalMs, 50)),
    };
    reportFigures("20 learners beside one user's 300 loops", figures);
    // Every learner call served.
    expect(ok(beside).length).toBe(beside.length);
    expect(figures.besideP99Ms).toBeLessThanOrEqual(4 * figures.aloneP99Ms + 100);
    expect(rate(beside, BUSY_MS)).toBeGreaterThanOrEqual(0.4 * rate(alone, ALONE_MS));
    // The one user's excess is refused as over its share, soon, never after waiting out a deadline.
    expect(greedy.refusalMs.length).toBeGreaterThan(0);
    expect(figures.refusalP50Ms).toBeLessThanOrEqual(2_000);
    expect(greedy.codes.deadline_exceeded).toBeUndefined();
  }, 60_000);
});
