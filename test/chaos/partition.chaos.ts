import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { insertQuiz, type QuizFixture } from "../support/fixtures.js";
import { sleep, startLoad } from "../support/load.js";
import {
  integrityViolations,
  listVia,
  NO_VIOLATIONS,
  percentile,
  reportFigures,
  TRANSPORTS,
  tally,
} from "../support/reliability.js";
import { startTestService, type TestService } from "../support/service.js";
import { defaultDatabaseLimits } from "../support/settings.js";

const QUERY_TIMEOUT_MS = defaultDatabaseLimits().queryTimeoutMs;

let svc: TestService;
let quiz: QuizFixture;
const users = Array.from({ length: 16 }, (_, i) => `part-${i}`);

beforeAll(async () => {
  svc = await startTestService({ proxy: true });
  quiz = await insertQuiz(svc.db, { questions: 5 });
});
afterAll(async () => {
  await svc?.close();
});

describe("a network partition (the database hangs instead of refusing)", () => {
  it("answers every call within about 5 s (ok or unavailable) during a 10 s partition, and recovers within 5 s of its end", async () => {
    const proxy = svc.proxy;
    if (!proxy) throw new Error("needs the proxy");
    const load = startLoad(svc, { users, quizId: quiz.quizId, workers: 8 });
    await sleep(500);
    const from = performance.now();
    proxy.partition();
    await sleep(10_000);
    const healedAt = performance.now();
    proxy.heal();
    await sleep(3000);
    const events = await load.stop();
    const inPartition = events.filter((e) => e.at >= from && e.at < healedAt);
    const firstOkAfter = events
      .filter((e) => e.at >= healedAt && e.code === "ok")
      .reduce((min, e) => Math.min(min, e.at + e.ms), Number.POSITIVE_INFINITY);
    reportFigures("partition 10 s", {
      calls: events.length,
      byCode: tally(events, (e) => e.code),
      inPartition: inPartition.length,
      maxMs: percentile(
        events.map((e) => e.ms),
        100,
      ),
      p99Ms: percentile(
        events.map((e) => e.ms),
        99,
      ),
      recoveryMs: Math.round(firstOkAfter - healedAt),
    });
    expect(Object.keys(tally(events, (e) => e.code)).sort()).toEqual(["ok", "unavailable"]);
    // No call waits for the partition to end: each is answered within the
    // 5 s statement timeout plus a 1 s connect timeout (and some slack).
    expect(Math.max(...events.map((e) => e.ms))).toBeLessThan(QUERY_TIMEOUT_MS + 2500);
    expect(firstOkAfter - healedAt).toBeLessThan(5000);
    for (const transport of TRANSPORTS) {
      expect((await listVia(svc, transport, "after", quiz.quizId)).code).toBe("ok");
    }
    expect(await integrityViolations(svc.db)).toEqual(NO_VIOLATIONS);
  });
});
