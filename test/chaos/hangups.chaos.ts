import { connect as netConnect } from "node:net";
import { createConnection } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { admissionConfig } from "../../src/config.js";
import { Admission } from "../../src/ops/admission.js";
import { insertQuiz, type QuizFixture } from "../support/fixtures.js";
import { sleep } from "../support/load.js";
import {
  integrityViolations,
  listVia,
  NO_VIOLATIONS,
  type Outcome,
  percentile,
  reportFigures,
  TRANSPORTS,
  tally,
} from "../support/reliability.js";
import { startTestService, type TestService } from "../support/service.js";

const POOL = 4;
let svc: TestService;
let quiz: QuizFixture;
const admission = new Admission(admissionConfig({}, POOL));

beforeAll(async () => {
  svc = await startTestService({ proxy: true, poolSize: POOL, admission });
  quiz = await insertQuiz(svc.db);
});
afterAll(async () => {
  await svc?.close();
});

/** Connections of the service's pool in use, plus queries waiting for one: use cases running. */
function running(): number {
  const pool = svc.servicePool as unknown as Record<string, { length: number }>;
  const all = pool._allConnections?.length ?? 0;
  const free = pool._freeConnections?.length ?? 0;
  return all - free + (pool._connectionQueue?.length ?? 0);
}

/** POSTs an answer over HTTP/1.1 and hangs up `afterMs` later, whatever came back. */
async function answerAndHangUp(sessionId: string, token: string, afterMs: number): Promise<void> {
  const port = Number(new URL(svc.baseUrl).port);
  const socket = netConnect(port, "127.0.0.1");
  socket.on("error", () => {});
  socket.resume();
  const body = JSON.stringify({ question_id: quiz.questionIds[0], user_answer: "gone" });
  socket.write(
    `POST /sessions/${sessionId}/answers HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${token}\r\n` +
      `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  await sleep(afterMs);
  socket.destroy();
}

describe("callers who hang up", () => {
  it(`with a pool of ${POOL}: 20 callers hanging up 2-20 ms into answers on locked rows for 8 s leave 10 learners served, and never more use cases run than admitted`, async () => {
    const hangers = Array.from({ length: 20 }, (_, i) => `hanger-${i}`);
    const sessions: string[] = [];
    for (const user of hangers) {
      const res = await svc.rest(user, "POST", `/quizzes/${quiz.quizId}/sessions`);
      sessions.push(((await res.json()) as { id: string }).id);
    }
    const tokens = await Promise.all(hangers.map((u) => svc.token(u)));
    const locker = await createConnection({ uri: svc.database.url });
    await locker.query("BEGIN");
    await locker.query(
      `SELECT id FROM practice_sessions WHERE id IN (${sessions.map(() => "?").join(",")}) FOR UPDATE`,
      sessions,
    );
    let maxRunning = 0;
    const sampler = setInterval(() => {
      maxRunning = Math.max(maxRunning, running());
    }, 2);
    const until = performance.now() + 8_000;
    let hangups = 0;
    const learners: Outcome[] = [];
    await Promise.all([
      ...hangers.map(async (_, i) => {
        while (performance.now() < until) {
          await answerAndHangUp(sessions[i] as string, tokens[i] as string, 2 + Math.random() * 18);
          hangups++;
        }
      }),
      ...Array.from({ length: 10 }, async (_, i) => {
        while (performance.now() < until) {
          const transport = TRANSPORTS[i % TRANSPORTS.length] ?? "rest";
          learners.push(await listVia(svc, transport, `learner-${i}`, quiz.quizId));
        }
      }),
    ]);
    clearInterval(sampler);
    const atEnd = { inFlight: admission.inFlight, queued: admission.queued };
    await sleep(1_000);
    const after = { inFlight: admission.inFlight, queued: admission.queued, running: running() };
    await locker.query("ROLLBACK");
    await locker.end();
    const ok = learners.filter((o) => o.code === "ok");
    reportFigures(`20 hang-ups beside 10 learners, pool ${POOL}`, {
      hangups,
      learnerCalls: learners.length,
      learnerCodes: tally(learners, (o) => o.code),
      learnerP99Ms: Math.round(
        percentile(
          ok.map((o) => o.ms),
          99,
        ),
      ),
      maxRunning,
      atEnd,
      after,
    });
    expect(ok.length / learners.length).toBeGreaterThanOrEqual(0.99);
    expect(
      percentile(
        ok.map((o) => o.ms),
        99,
      ),
    ).toBeLessThanOrEqual(1_000);
    expect(maxRunning).toBeLessThanOrEqual(POOL);
    // Nothing half-written, nothing left locked: every stopped answer is absent whole.
    await sleep(500);
    for (const [i, id] of sessions.entries()) {
      const res = await svc.rest(hangers[i] as string, "GET", `/sessions/${id}`);
      expect(res.status).toBe(200);
      expect(((await res.json()) as { answers: unknown[] }).answers).toEqual([]);
    }
    expect(await integrityViolations(svc.db)).toEqual(NO_VIOLATIONS);
  }, 60_000);
});
