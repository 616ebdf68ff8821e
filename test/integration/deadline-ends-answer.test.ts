import { request as httpRequest } from "node:http";
import { connect as h2connect } from "node:http2";
import { type Connection, createConnection } from "mysql2/promise";
import { pino } from "pino";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { admissionConfig } from "../../src/config.js";
import { Admission, type Slot } from "../../src/ops/admission.js";
import { testStore } from "../support/database.js";
import { insertQuiz, type QuizFixture } from "../support/fixtures.js";
import { sleep } from "../support/load.js";
import { startTestService, type TestService } from "../support/service.js";

let svc: TestService;
let quiz: QuizFixture;
const REQUEST_TIMEOUT_MS = 1500;
/** How long the other client holds the learner's row: well past the deadline. */
const LOCK_HELD_MS = 4000;
/**
 * The whole answer, head to end, by the deadline and half a second: the
 * issue's bound (generous against this machine's scheduling; the bug it
 * catches ends the answer only when the lock goes, 2.5 s later).
 */
const WHOLE_ANSWER_MS = 2200;

// Holding a row lock needs MySQL; SQLite statements are short and stop between statements.
const mysqlOnly = describe.skipIf(testStore() === "sqlite");

/**
 * What the service logged during the current test beyond the one expected
 * warning per failed call ("request failed"): Fastify's errors and warnings
 * of a second answer ("Promise errored, but reply.sent = true was set",
 * "Reply was already sent") among them.
 */
let errorsLogged: { msg?: string }[] = [];
const logger = pino(
  { level: "warn" },
  {
    write(line: string) {
      const entry = JSON.parse(line) as { level: number; msg?: string };
      if (entry.level >= 50 || entry.msg !== "request failed") errorsLogged.push(entry);
    },
  },
);

beforeEach(() => {
  errorsLogged = [];
});

beforeAll(async () => {
  if (testStore() === "sqlite") return;
  svc = await startTestService({ requestTimeoutMs: REQUEST_TIMEOUT_MS, logger });
  quiz = await insertQuiz(svc.db);
});
afterAll(async () => {
  await svc?.close();
});

/**
 * Another client holds session `id`'s row (`SELECT … FOR UPDATE`) for
 * LOCK_HELD_MS while `call` runs; resolves with what `call` gave.
 */
async function whileRowHeld<T>(id: string, call: () => Promise<T>): Promise<T> {
  const locker: Connection = await createConnection({ uri: svc.database.url });
  try {
    await locker.query("BEGIN");
    await locker.query("SELECT id FROM practice_sessions WHERE id = ? FOR UPDATE", [id]);
    const release = new Promise((resolve) => setTimeout(resolve, LOCK_HELD_MS)).then(() =>
      locker.query("ROLLBACK"),
    );
    try {
      return await call();
    } finally {
      await release;
    }
  } finally {
    await locker.end();
  }
}

interface Whole {
  status: number;
  /** From the request's start to the last byte of the answer. */
  ms: number;
  body: string;
}

/** One request over HTTP/1.1 on a fresh connection, read to its end. */
function overHttp1(
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
): Promise<Whole> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const url = new URL(path, svc?.baseUrl);
    const req = httpRequest(
      { host: url.hostname, port: url.port, path: url.pathname, method, headers, agent: false },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          text += chunk;
        });
        res.once("end", () =>
          resolve({ status: res.statusCode ?? 0, ms: performance.now() - started, body: text }),
        );
        res.once("error", reject);
      },
    );
    req.once("error", reject);
    req.end(body);
  });
}

/** One request over h2c (prior knowledge) on a fresh session, read to the stream's end. */
function overH2c(
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
): Promise<Whole> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const url = new URL(path, svc?.baseUrl);
    const session = h2connect(url.origin);
    session.once("error", reject);
    const stream = session.request({ ":method": method, ":path": url.pathname, ...headers });
    let status = 0;
    let text = "";
    stream.setEncoding("utf8");
    stream.once("response", (h) => {
      status = Number(h[":status"]);
    });
    stream.on("data", (chunk: string) => {
      text += chunk;
    });
    stream.once("end", () => {
      resolve({ status, ms: performance.now() - started, body: text });
      session.close();
    });
    stream.once("error", reject);
    stream.end(body);
  });
}

const TRANSPORTS = [
  ["HTTP/1.1", overHttp1],
  ["h2c", overH2c],
] as const;

async function newSession(user: string): Promise<string> {
  const res = await svc.rest(user, "POST", `/quizzes/${quiz.quizId}/sessions`);
  expect(res.status).toBe(201);
  return ((await res.json()) as { id: string }).id;
}

mysqlOnly(
  "a REST answer past its deadline ends at the deadline, whatever the database waits for",
  () => {
    for (const [name, send] of TRANSPORTS) {
      it(`an answer over ${name}: the whole 504 within ${WHOLE_ANSWER_MS} ms`, async () => {
        const user = `answer-${name}`;
        const id = await newSession(user);
        const token = await svc.token(user);
        const answer = await whileRowHeld(id, () =>
          send(
            "POST",
            `/sessions/${id}/answers`,
            { authorization: `Bearer ${token}`, "content-type": "application/json" },
            JSON.stringify({ question_id: quiz.questionIds[0], user_answer: "x" }),
          ),
        );
        expect(answer.status).toBe(504);
        expect(JSON.parse(answer.body)).toMatchObject({ code: "deadline_exceeded", status: 504 });
        expect(answer.ms).toBeLessThan(WHOLE_ANSWER_MS);
        // One answer: the handler, stopped later, answers nothing more (Fastify logs it if it tries).
        expect(errorsLogged).toEqual([]);
      });

      it(`a completion over ${name}: the whole 504 within ${WHOLE_ANSWER_MS} ms`, async () => {
        const user = `complete-${name}`;
        const id = await newSession(user);
        const token = await svc.token(user);
        const completion = await whileRowHeld(id, () =>
          send("POST", `/sessions/${id}/complete`, { authorization: `Bearer ${token}` }),
        );
        expect(completion.status).toBe(504);
        expect(JSON.parse(completion.body)).toMatchObject({ code: "deadline_exceeded" });
        expect(completion.ms).toBeLessThan(WHOLE_ANSWER_MS);
        expect(errorsLogged).toEqual([]);
      });

      it(`a start over ${name} that must delete the learner's stale session: the whole 504 within ${WHOLE_ANSWER_MS} ms`, async () => {
        const user = `start-${name}`;
        const id = await newSession(user);
        // Stale: the start deletes it first, and so waits for its row.
        await svc.db
          .updateTable("practice_sessions")
          .set({ started_at: new Date(svc.clock.now().getTime() - 8 * 86_400_000) })
          .where("id", "=", id)
          .execute();
        const token = await svc.token(user);
        const start = await whileRowHeld(id, () =>
          send("POST", `/quizzes/${quiz.quizId}/sessions`, { authorization: `Bearer ${token}` }),
        );
        expect(start.status).toBe(504);
        expect(JSON.parse(start.body)).toMatchObject({ code: "deadline_exceeded" });
        expect(start.ms).toBeLessThan(WHOLE_ANSWER_MS);
        expect(errorsLogged).toEqual([]);
      });
    }
  },
);

/** A Connect deadline shorter than REQUEST_TIMEOUT_MS: the whole answer by it and half a second. */
const CONNECT_TIMEOUT_MS = 1000;

mysqlOnly("a Connect answer past the caller's own deadline ends at that deadline", () => {
  const procedures = [
    [
      "SubmitAnswer",
      (id: string) => ({ session_id: id, question_id: quiz.questionIds[0], user_answer: "x" }),
    ],
    ["CompleteSession", (id: string) => ({ session_id: id })],
  ] as const;
  for (const [name, send] of TRANSPORTS) {
    for (const [procedure, message] of procedures) {
      it(`${procedure} over ${name} with connect-timeout-ms ${CONNECT_TIMEOUT_MS}: the whole deadline_exceeded by ${CONNECT_TIMEOUT_MS + 500} ms`, async () => {
        const user = `connect-${procedure}-${name}`;
        const id = await newSession(user);
        const token = await svc.token(user);
        const answer = await whileRowHeld(id, () =>
          send(
            "POST",
            `/practice.v1.PracticeSessionService/${procedure}`,
            {
              authorization: `Bearer ${token}`,
              "content-type": "application/json",
              "connect-protocol-version": "1",
              "connect-timeout-ms": String(CONNECT_TIMEOUT_MS),
            },
            JSON.stringify(message(id)),
          ),
        );
        expect(JSON.parse(answer.body)).toMatchObject({ code: "deadline_exceeded" });
        expect(answer.status).toBe(504);
        expect(answer.ms).toBeLessThan(CONNECT_TIMEOUT_MS + 500);
        expect(errorsLogged).toEqual([]);
      });
    }
  }
});

/**
 * Admission whose work, once stopped, takes LINGER_MS more to give its slot
 * back (as a retry's sleep or a pool's wait would): the answer must not wait for it.
 */
const LINGER_MS = 2000;
class LingeringAdmission extends Admission {
  override run<T>(slot: Slot, work: () => Promise<T>): Promise<T> {
    return super.run({ ...slot, signal: undefined }, async () => {
      try {
        return await work();
      } finally {
        await sleep(LINGER_MS);
      }
    });
  }
}

describe("a REST answer past its deadline does not wait for its work to give the slot back", () => {
  let lingering: TestService;
  let fixture: QuizFixture;
  const admission = new LingeringAdmission(admissionConfig({}, 10));
  beforeAll(async () => {
    lingering = await startTestService({ requestTimeoutMs: 300, admission });
    fixture = await insertQuiz(lingering.db);
  });
  afterAll(async () => {
    await lingering?.close();
  });

  for (const [name, send] of TRANSPORTS) {
    it(`over ${name}: the whole 504 at the deadline, the slot held until the work gave it back`, async () => {
      const token = await lingering.token("lingering");
      const started = performance.now();
      const res = await send("POST", `${lingering.baseUrl}/quizzes/${fixture.quizId}/sessions`, {
        authorization: `Bearer ${token}`,
      });
      expect(res.status).toBe(504);
      // Generous: the deadline is 300 ms, the work gives its slot back 2 s later.
      expect(performance.now() - started).toBeLessThan(300 + 500);
      expect(admission.inFlight).toBe(1);
      await sleep(LINGER_MS);
      expect(admission.inFlight).toBe(0);
    });
  }
});
