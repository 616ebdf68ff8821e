import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { insertQuiz, type QuizFixture } from "../support/fixtures.js";
import { sleep, startLoad } from "../support/load.js";
import {
  integrityViolations,
  listVia,
  NO_VIOLATIONS,
  percentile,
  reportFigures,
  startVia,
  TRANSPORTS,
  tally,
} from "../support/reliability.js";
import { startTestService, type TestService } from "../support/service.js";

let svc: TestService;
let quiz: QuizFixture;
const users = Array.from({ length: 60 }, (_, i) => `chaos-${i}`);

beforeAll(async () => {
  svc = await startTestService({ proxy: true });
  quiz = await insertQuiz(svc.db, { questions: 12 });
  await Promise.all(users.map((u) => svc.auth(u)));
});
afterAll(async () => {
  await svc?.close();
});

/** Deterministic pseudo-random numbers, so a failing run can be replayed. */
function prng(seed: number) {
  let x = seed;
  return () => {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    return x / 2 ** 31;
  };
}

describe("repeated database outages under load", () => {
  it("8 cuts of 0.2-2 s, then 2 s of flapping: only ok or unavailable, recovery within 5 s of each return, tables intact", async () => {
    const proxy = svc.proxy;
    if (!proxy) throw new Error("needs the proxy");
    const random = prng(Number(process.env.CHAOS_SEED ?? 20260101));
    const load = startLoad(svc, { users, quizId: quiz.quizId, workers: 24 });
    const restores: number[] = [];
    for (let i = 0; i < 8; i++) {
      await sleep(300 + random() * 1200);
      await proxy.cut();
      await sleep(200 + random() * 1800);
      restores.push(performance.now());
      await proxy.restore();
    }
    const flapUntil = performance.now() + 2000;
    while (performance.now() < flapUntil) {
      await proxy.cut();
      await sleep(50 + random() * 100);
      await proxy.restore();
      await sleep(50 + random() * 100);
    }
    restores.push(performance.now());
    await sleep(2500);
    const events = await load.stop();

    const recoveries = restores.map((at) => {
      const firstOk = events
        .filter((e) => e.at >= at && e.code === "ok")
        .reduce((min, e) => Math.min(min, e.at + e.ms), Number.POSITIVE_INFINITY);
      return Math.round(firstOk - at);
    });
    const byCode = tally(events, (e) => e.code);
    reportFigures("8 cuts + flapping under load", {
      calls: events.length,
      byCode,
      recoveriesMs: recoveries,
      maxCallMs: percentile(
        events.map((e) => e.ms),
        100,
      ),
    });
    expect(Object.keys(byCode).sort()).toEqual(["ok", "unavailable"]);
    for (const e of events) if (e.transport === "rest") expect([200, 201, 503]).toContain(e.status);
    for (const ms of recoveries) expect(ms).toBeLessThan(5000);
    for (const transport of TRANSPORTS) {
      expect((await listVia(svc, transport, "after", quiz.quizId)).code).toBe("ok");
      expect((await startVia(svc, transport, `after-${transport}`, quiz.quizId)).code).toBe("ok");
    }
    expect(await integrityViolations(svc.db)).toEqual(NO_VIOLATIONS);
  });
});
