import { request as httpRequest } from "node:http";
import { type Connection, createConnection } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clientProcess } from "../support/client-process.js";
import { insertQuiz, type QuizFixture } from "../support/fixtures.js";
import { sleep } from "../support/load.js";
import { percentile, reportFigures, tally } from "../support/reliability.js";
import { type ServiceProcess, startServiceProcess } from "../support/service-process.js";

// A storm of callers who leave: 50 workers for 20 users, each opening a
// connection, answering on a session whose row another client holds FOR
// UPDATE, and closing 2-20 ms later. A learner calling on fresh connections
// meanwhile is served throughout, and at once after the storm.

const USERS = 20;
const WORKERS = 50;
const STORM_MS = 10_000;

/** One GET on a connection of its own (no keep-alive), as a new caller makes it. */
function freshGet(url: string, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; ms: number }>((resolve) => {
    const t0 = performance.now();
    const req = httpRequest(url, { agent: false, headers: { ...headers, connection: "close" } });
    req.on("response", (res) => {
      res.resume();
      res.on("end", () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - t0 }));
    });
    req.on("error", () => resolve({ status: 0, ms: performance.now() - t0 }));
    req.end();
  });
}

async function admitted(svc: ServiceProcess): Promise<number> {
  const metrics = await (await fetch(`${svc.metricsUrl}/metrics`)).text();
  const line = metrics
    .split("\n")
    .find((l) => l.startsWith('practice_admission_calls_total{outcome="admitted"}'));
  return Number(line?.split(" ").pop());
}

async function kills(db: Connection): Promise<number> {
  const [rows] = await db.query("SHOW GLOBAL STATUS LIKE 'Com_kill'");
  return Number((rows as { Value: string }[])[0]?.Value);
}

describe("a storm of short-lived connections on locked rows", () => {
  let svc: ServiceProcess;
  let quiz: QuizFixture;
  beforeAll(async () => {
    svc = await startServiceProcess();
    quiz = await insertQuiz(svc.db);
  });
  afterAll(async () => {
    await svc?.close();
  });

  it(`${WORKERS} workers for ${USERS} users, ${STORM_MS / 1000} s: a learner on fresh connections gets every call, p50 ≤ 250 ms, and its first call after the storm ≤ 500 ms; no statement left running`, async () => {
    const users = Array.from({ length: USERS }, (_, i) => `storm-${i}`);
    const sessions: string[] = [];
    for (const user of users) {
      const res = await svc.rest(user, "POST", `/quizzes/${quiz.quizId}/sessions`);
      sessions.push(((await res.json()) as { id: string }).id);
    }
    const body = JSON.stringify({ question_id: quiz.questionIds[0], user_answer: "gone" });
    const requests = await Promise.all(
      users.map(
        async (user, i) =>
          `POST /sessions/${sessions[i]}/answers HTTP/1.1\r\nhost: x\r\n` +
          `authorization: Bearer ${await svc.token(user)}\r\ncontent-type: application/json\r\n` +
          `content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      ),
    );
    const locker = await createConnection({ uri: svc.databaseUrl });
    await locker.query("BEGIN");
    await locker.query(
      `SELECT id FROM practice_sessions WHERE id IN (${sessions.map(() => "?").join(",")}) FOR UPDATE`,
      sessions,
    );
    const learnerAuth = await svc.auth("learner");
    const admittedBefore = await admitted(svc);
    const killsBefore = await kills(locker);
    const list = `${svc.baseUrl}/quizzes/${quiz.quizId}/sessions`;

    const storm = clientProcess<{ connections: number }>("storm-client.ts", [
      JSON.stringify({
        port: Number(new URL(svc.baseUrl).port),
        requests,
        workers: WORKERS,
        durationMs: STORM_MS,
        closeAfterMs: [2, 20],
      }),
    ]);
    let storming = true;
    void storm.result.finally(() => {
      storming = false;
    });
    const learner: { status: number; ms: number }[] = [];
    const health: { status: number; ms: number }[] = [];
    await sleep(500);
    await Promise.all([
      (async () => {
        while (storming) {
          const next = sleep(100);
          learner.push(await freshGet(list, learnerAuth));
          await next;
        }
      })(),
      (async () => {
        while (storming) {
          health.push(await freshGet(`${svc.baseUrl}/healthz`));
          await sleep(500);
        }
      })(),
    ]);
    const { connections } = await storm.result;
    await locker.query("ROLLBACK");
    const after = await freshGet(list, learnerAuth);
    const stormAdmitted = (await admitted(svc)) - admittedBefore - learner.length - 1;
    const stormKills = (await kills(locker)) - killsBefore;
    // What the storm's calls left on the server: none of its statements still running.
    await sleep(1000);
    const database = new URL(svc.databaseUrl).pathname.slice(1);
    const [running] = await locker.query(
      "SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE DB = ? AND COMMAND = 'Query' AND ID <> CONNECTION_ID()",
      [database],
    );
    await locker.end();
    const metrics = await (await fetch(`${svc.metricsUrl}/metrics`)).text();
    const canceled = metrics
      .split("\n")
      .filter((l) => l.startsWith("practice_requests_total{") && l.includes('code="canceled"'))
      .reduce((sum, l) => sum + Number(l.split(" ").pop()), 0);

    const ms = learner.map((o) => o.ms);
    reportFigures("short-lived connection storm", {
      connections,
      canceledCounted: canceled,
      stormAdmitted,
      stormKills,
      learnerCalls: learner.length,
      learnerStatuses: tally(learner, (o) => String(o.status)),
      learnerP50Ms: Math.round(percentile(ms, 50)),
      learnerP99Ms: Math.round(percentile(ms, 99)),
      firstAfterMs: Math.round(after.ms),
      healthzP50Ms: Math.round(
        percentile(
          health.map((o) => o.ms),
          50,
        ),
      ),
      stillRunning: (running as { n: number }[])[0]?.n,
    });
    expect(connections).toBeGreaterThanOrEqual(8000);
    expect(learner.length).toBeGreaterThan(0);
    expect(learner.every((o) => o.status === 200)).toBe(true);
    expect(percentile(ms, 50)).toBeLessThanOrEqual(250);
    expect(after.status).toBe(200);
    expect(after.ms).toBeLessThanOrEqual(500);
    expect(Number((running as { n: number }[])[0]?.n)).toBe(0);
  }, 120_000);
});
