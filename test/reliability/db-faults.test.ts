import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testStore } from "../support/database.js";
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
const users = Array.from({ length: 24 }, (_, i) => `load-${i}`);

beforeAll(async () => {
  // SQLite is a file in the process: there is no connection to cut.
  if (testStore() === "sqlite") return;
  svc = await startTestService({ proxy: true });
  quiz = await insertQuiz(svc.db, { questions: 8 });
  await Promise.all(users.map((u) => svc.auth(u)));
});
afterAll(async () => {
  await svc?.close();
});

describe.skipIf(testStore() === "sqlite")("the database connection is cut under load", () => {
  it("answers 503/unavailable (never 500), recovers within 5 s of the database's return, and leaves no half-written session", async () => {
    const proxy = svc.proxy;
    if (!proxy) throw new Error("needs the proxy");
    const load = startLoad(svc, { users, quizId: quiz.quizId, workers: 12 });
    await sleep(600);
    const cutAt = performance.now();
    await proxy.cut();
    await sleep(1200);
    const restoredAt = performance.now();
    await proxy.restore();
    await sleep(1500);
    const events = await load.stop();

    const byCode = tally(events, (e) => e.code);
    const during = events.filter((e) => e.at >= cutAt + 50 && e.at + e.ms <= restoredAt);
    const firstOkAfter = events
      .filter((e) => e.at >= restoredAt && e.code === "ok")
      .reduce((min, e) => Math.min(min, e.at + e.ms), Number.POSITIVE_INFINITY);
    const unavailable = events.filter((e) => e.code === "unavailable");
    reportFigures("db cut under load", {
      calls: events.length,
      byCode,
      callsDuringOutage: during.length,
      unavailableP50Ms: percentile(
        unavailable.map((e) => e.ms),
        50,
      ),
      unavailableP99Ms: percentile(
        unavailable.map((e) => e.ms),
        99,
      ),
      recoveryMs: Math.round(firstOkAfter - restoredAt),
    });

    // Only two answers, ever: served, or unavailable (503 over REST).
    expect(Object.keys(byCode).sort()).toEqual(["ok", "unavailable"]);
    for (const e of events) {
      if (e.transport === "rest") expect([200, 201, 503]).toContain(e.status);
      if (e.status === 503) expect(e.code).toBe("unavailable");
    }
    expect(during.length).toBeGreaterThan(0);
    expect(during.every((e) => e.code === "unavailable")).toBe(true);
    expect(firstOkAfter - restoredAt).toBeLessThan(5000);

    // Serving again, on every transport, without a restart.
    for (const transport of TRANSPORTS) {
      expect((await listVia(svc, transport, "after", quiz.quizId)).code).toBe("ok");
      expect((await startVia(svc, transport, `after-${transport}`, quiz.quizId)).code).toBe("ok");
    }
    expect(await integrityViolations(svc.db)).toEqual(NO_VIOLATIONS);
  });
});
