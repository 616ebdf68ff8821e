import { request as httpRequest } from "node:http";
import { Code, ConnectError } from "@connectrpc/connect";
import { type Connection, createConnection } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testStore } from "../support/database.js";
import { insertQuiz, type QuizFixture } from "../support/fixtures.js";
import { sleep } from "../support/load.js";
import { startTestService, type TestService } from "../support/service.js";

let svc: TestService;
let quiz: QuizFixture;
const USER = "deadline-user";
const REQUEST_TIMEOUT_MS = 800;

// Holding a row lock needs MySQL; SQLite statements are short and stop between statements.
const mysqlOnly = describe.skipIf(testStore() === "sqlite");

beforeAll(async () => {
  if (testStore() === "sqlite") return;
  svc = await startTestService({ requestTimeoutMs: REQUEST_TIMEOUT_MS });
  quiz = await insertQuiz(svc.db);
});
afterAll(async () => {
  await svc?.close();
});

/** Runs `body` while another connection holds session `id`'s row lock. */
async function withSessionLocked(id: string, body: (locker: Connection) => Promise<void>) {
  const locker = await createConnection({ uri: svc.database.url });
  await locker.query("BEGIN");
  await locker.query("SELECT id FROM practice_sessions WHERE id = ? FOR UPDATE", [id]);
  try {
    await body(locker);
  } finally {
    await locker.query("ROLLBACK");
    await locker.end();
  }
}

/** Statements of the service waiting or running in its database now (not the test's own). */
async function serviceStatements(locker: Connection): Promise<string[]> {
  return (await runningSessions(locker)).map((r) => String(r.INFO));
}

/** The service's sessions running a statement now, and the statement. */
async function runningSessions(locker: Connection) {
  const [rows] = await locker.query(
    "SELECT ID, INFO FROM information_schema.PROCESSLIST WHERE DB = DATABASE() AND ID <> CONNECTION_ID() AND COMMAND = 'Query'",
  );
  return rows as { ID: number; INFO: string | null }[];
}

/** A REST POST with a JSON body over HTTP/1.1 (node:http): status and how many answers came. */
function postOverHttp1(path: string, body: unknown, token: string) {
  return new Promise<{ status: number; ms: number }>((resolve, reject) => {
    const started = performance.now();
    const url = new URL(path, svc.baseUrl);
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      },
      (res) => {
        res.resume();
        res.once("end", () =>
          resolve({ status: res.statusCode ?? 0, ms: performance.now() - started }),
        );
      },
    );
    req.once("error", reject);
    req.end(JSON.stringify(body));
  });
}

mysqlOnly("a call past its deadline", () => {
  it("a REST POST with a body over HTTP/1.1 on a locked row gets one 504 within REQUEST_TIMEOUT_MS + 0.5 s, and its statement is gone at once", async () => {
    const token = await svc.token(USER);
    const started = await svc.rest(USER, "POST", `/quizzes/${quiz.quizId}/sessions`);
    const session = (await started.json()) as { id: string };
    await withSessionLocked(session.id, async (locker) => {
      const answer = await postOverHttp1(
        `/sessions/${session.id}/answers`,
        { question_id: quiz.questionIds[0], user_answer: "x" },
        token,
      );
      expect(answer.status).toBe(504);
      expect(answer.ms).toBeLessThan(REQUEST_TIMEOUT_MS + 500);
      await sleep(100);
      expect(await serviceStatements(locker)).toEqual([]);
    });
    // Stopped whole: nothing was written.
    const after = await svc.rest(USER, "GET", `/sessions/${session.id}`);
    expect(((await after.json()) as { answers: unknown[] }).answers).toEqual([]);
  });

  it("over Connect and gRPC: one deadline_exceeded, and the statement is gone from PROCESSLIST within 100 ms", async () => {
    const auth = await svc.auth(USER);
    const started = await svc.rest(USER, "POST", `/quizzes/${quiz.quizId}/sessions`);
    const session = (await started.json()) as { id: string };
    const request = { sessionId: session.id, questionId: quiz.questionIds[0], userAnswer: "x" };
    await withSessionLocked(session.id, async (locker) => {
      for (const client of [svc.connect, svc.grpcWeb]) {
        const err = await client.submitAnswer(request, { headers: auth }).catch((e) => e);
        expect(ConnectError.from(err).code).toBe(Code.DeadlineExceeded);
        await sleep(100);
        expect(await serviceStatements(locker)).toEqual([]);
      }
      await expect(svc.grpc.submitAnswer(request, auth)).rejects.toMatchObject({ code: 4 });
      await sleep(100);
      expect(await serviceStatements(locker)).toEqual([]);
    });
  });

  it("a stopped statement keeps its connection: its session stays connected, and the next answer on the row is stored", async () => {
    const auth = await svc.auth(USER);
    const started = await svc.rest(USER, "POST", `/quizzes/${quiz.quizId}/sessions`);
    const session = (await started.json()) as { id: string };
    const request = { sessionId: session.id, questionId: quiz.questionIds[1], userAnswer: "A2" };
    await withSessionLocked(session.id, async (locker) => {
      const call = svc.connect.submitAnswer(request, { headers: auth }).catch((e) => e);
      // The service's statement waiting for the row's lock, and the session running it.
      let waiting: number | undefined;
      while (waiting === undefined) {
        waiting = (await runningSessions(locker)).find((r) => /^update/i.test(r.INFO ?? ""))?.ID;
        if (waiting === undefined) await sleep(20);
      }
      expect(ConnectError.from(await call).code).toBe(Code.DeadlineExceeded);
      await sleep(100);
      expect(await serviceStatements(locker)).toEqual([]);
      const [alive] = await locker.query(
        "SELECT COMMAND FROM information_schema.PROCESSLIST WHERE ID = ?",
        [waiting],
      );
      expect(alive).toEqual([{ COMMAND: "Sleep" }]);
    });
    // Nothing of the stopped answer was written, and the same answer now stores.
    const res = await svc.connect.submitAnswer(request, { headers: auth });
    expect(res.answer?.userAnswer).toBe("A2");
    expect(res.session?.answeredQuestions).toBe(1);
  });
});
