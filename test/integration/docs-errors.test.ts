import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { SignJWT } from "jose";
import { createConnection } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signToken } from "../../src/auth/tokens.js";
import { testStore } from "../support/database.js";
import { insertQuiz } from "../support/fixtures.js";
import { rawExchange } from "../support/raw-http.js";
import { startTestService, TEST_SECRET, type TestService } from "../support/service.js";

// docs/api.md's error table, row by row, against the running service: each
// row's case is produced and its documented code and REST status checked.

interface Row {
  text: string;
  /** The Connect code in the row, or "ok". */
  code: string;
  status: number;
}

/** What one call got: its HTTP status and error code ("ok" for a success). */
interface Outcome {
  status: number;
  code: string;
}

function errorRows(): Row[] {
  const doc = readFileSync(resolve(import.meta.dirname, "../../docs/api.md"), "utf8");
  const section = doc.split(/^## Errors$/m)[1]?.split(/^## /m)[0] ?? "";
  return [...section.matchAll(/^\|(.+)\|(.+)\|(.+)\|$/gm)]
    .map((m) => m.slice(1, 4).map((cell) => cell.trim()) as [string, string, string])
    .filter(([text, , rest]) => text !== "Case" && !/^-+$/.test(text) && /\d{3}/.test(rest))
    .map(([text, code, rest]) => ({
      text,
      code: code.startsWith("OK") ? "ok" : (/`([a-z_]+)`/.exec(code)?.[1] ?? code),
      status: Number(/\d{3}/.exec(rest)?.[0]),
    }));
}

const mysql = testStore() === "mysql";
const REQUEST_TIMEOUT_MS = 1500;
let svc: TestService;
let port: number;

beforeAll(async () => {
  svc = await startTestService({ proxy: mysql, requestTimeoutMs: REQUEST_TIMEOUT_MS });
  port = Number(new URL(svc.baseUrl).port);
});
afterAll(async () => {
  await svc?.close();
});

let users = 0;
const newUser = () => `docs-errors-${++users}`;

async function outcome(res: Response): Promise<Outcome & { body: unknown }> {
  const body = await res.json().catch(() => undefined);
  const code = res.ok ? "ok" : String((body as { code?: unknown } | undefined)?.code);
  return { status: res.status, code, body };
}

/** A raw HTTP/1.1 exchange: its status and the problem's code. */
async function raw(payload: string): Promise<Outcome> {
  const { response } = await rawExchange(port, payload, { untilIncludes: '"}' });
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(response)?.[1]);
  return { status, code: /"code":"([a-z_]+)"/.exec(response)?.[1] ?? "" };
}

async function startSession(user: string, questions = 2) {
  const quiz = await insertQuiz(svc.db, { questions });
  const res = await svc.rest(user, "POST", `/quizzes/${quiz.quizId}/sessions`);
  expect(res.status).toBe(201);
  const session = (await res.json()) as { id: string };
  return { quiz, sessionId: session.id };
}

const answer = (user: string, sessionId: string, questionId: string, text: string) =>
  svc.rest(user, "POST", `/sessions/${sessionId}/answers`, {
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ question_id: questionId, user_answer: text }),
  });

/** All outcomes of one row must be the same, bodies too when `sameBody`. */
async function allOf(calls: Promise<Outcome & { body?: unknown }>[], sameBody = false) {
  const results = await Promise.all(calls);
  if (sameBody) for (const r of results) expect(r.body).toEqual(results[0]?.body);
  return results.map(({ status, code }) => ({ status, code }));
}

/** Each row's case, found by words of its text; `mysql`: needs MySQL's locks or the proxy. */
const scenarios: { words: string; mysql?: boolean; run: () => Promise<Outcome[]> }[] = [
  {
    words: "quiz missing, soft-deleted",
    async run() {
      const deleted = await insertQuiz(svc.db, { quizDeleted: true });
      const guideDeleted = await insertQuiz(svc.db, { studyGuideDeleted: true });
      const user = newUser();
      const ids = ["999999999", deleted.quizId, guideDeleted.quizId, "not-a-quiz"];
      return [
        ...(await allOf(
          ids.map(async (id) => outcome(await svc.rest(user, "GET", `/quizzes/${id}`))),
          true,
        )),
        ...(await allOf(
          ids.map(async (id) => outcome(await svc.rest(user, "GET", `/quizzes/${id}/sessions`))),
          true,
        )),
      ];
    },
  },
  {
    words: "session missing, another user's",
    async run() {
      const { sessionId } = await startSession(newUser());
      const user = newUser();
      const ids = ["019a0000-0000-7000-8000-000000000000", sessionId, "nope"];
      return allOf(
        ids.map(async (id) => outcome(await svc.rest(user, "GET", `/sessions/${id}`))),
        true,
      );
    },
  },
  {
    words: "no bearer token: no `authorization` header",
    async run() {
      const results = [];
      for (const auth of [null, "Basic YTpi"]) {
        const res = await fetch(`${svc.baseUrl}/quizzes/1`, {
          headers: auth ? { authorization: auth } : {},
        });
        expect(res.headers.get("www-authenticate")).toMatch(
          /^Bearer error="invalid_request", error_description="[^"]+"$/,
        );
        results.push(await outcome(res));
      }
      return results;
    },
  },
  {
    words: "a token that is not a JWT, wrongly signed, expired, not yet valid",
    async run() {
      const now = svc.clock.now();
      const s = Math.floor(now.getTime() / 1000);
      const notYet = await new SignJWT({ sub: "u" })
        .setProtectedHeader({ alg: "HS256" })
        .setNotBefore(s + 600)
        .setExpirationTime(s + 900)
        .sign(new TextEncoder().encode(TEST_SECRET));
      const wrong = await signToken("x".repeat(40), "u", { now });
      const expired = await signToken(TEST_SECRET, "u", { now, ttlSeconds: -60 });
      const results = [];
      for (const token of ["not.a.jwt", notYet, wrong, expired]) {
        const res = await fetch(`${svc.baseUrl}/quizzes/1`, {
          headers: { authorization: `Bearer ${token}` },
        });
        expect(res.headers.get("www-authenticate")).toMatch(
          /^Bearer error="invalid_token", error_description="[^"]+"$/,
        );
        results.push(await outcome(res));
      }
      return results;
    },
  },
  {
    words: "bad `status`, `limit`, `cursor`, answer, or a question outside",
    async run() {
      const user = newUser();
      const { quiz, sessionId } = await startSession(user);
      const other = await insertQuiz(svc.db);
      const list = `/quizzes/${quiz.quizId}/sessions`;
      return allOf([
        svc.rest(user, "GET", `${list}?status=all`).then(outcome),
        svc.rest(user, "GET", `${list}?limit=0`).then(outcome),
        svc.rest(user, "GET", `${list}?cursor=garbage`).then(outcome),
        svc
          .rest(user, "POST", `/sessions/${sessionId}/answers`, {
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ question_id: quiz.questionIds[0], user_answer: 42 }),
          })
          .then(outcome),
        answer(user, sessionId, other.questionIds[0] ?? "", "x").then(outcome),
        svc.rest(user, "GET", `/quizzes/${"1".repeat(65)}/sessions`).then(outcome),
        svc
          .rest(user, "POST", `/sessions/${sessionId}/answers`, {
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ questionId: quiz.questionIds[0], user_answer: "x" }),
          })
          .then(outcome),
      ]);
    },
  },
  {
    words: "not well-formed Unicode",
    async run() {
      const user = newUser();
      const { quiz, sessionId } = await startSession(user);
      return allOf([
        svc
          .rest(user, "POST", `/sessions/${sessionId}/answers`, {
            headers: { "content-type": "application/json" },
            body: `{"question_id":"${quiz.questionIds[0]}","user_answer":"x\\ud800"}`,
          })
          .then(outcome),
        svc.rest(user, "GET", `/quizzes/${quiz.quizId}/sessions?cursor=%ED%A0%80`).then(outcome),
      ]);
    },
  },
  {
    words: "a body that is not JSON, sent as",
    async run() {
      const user = newUser();
      const quiz = await insertQuiz(svc.db);
      const res = await svc.rest(user, "POST", `/quizzes/${quiz.quizId}/sessions`, {
        headers: { "content-type": "application/json" },
        body: "{not json",
      });
      return [await outcome(res)];
    },
  },
  {
    words: "another content type",
    async run() {
      const user = newUser();
      const quiz = await insertQuiz(svc.db);
      const res = await svc.rest(user, "POST", `/quizzes/${quiz.quizId}/sessions`, {
        headers: { "content-type": "text/plain" },
        body: "{}",
      });
      const problem = await outcome(res);
      expect(JSON.stringify(problem.body)).toContain("application/json");
      return [problem];
    },
  },
  {
    words: "message that does not parse",
    async run() {
      const user = newUser();
      const res = await fetch(`${svc.baseUrl}/practice.v1.PracticeSessionService/ListSessions`, {
        method: "POST",
        headers: { ...(await svc.auth(user)), "content-type": "application/proto" },
        body: new Uint8Array([0xff, 0xff, 0xff]),
      });
      return [await outcome(res)];
    },
  },
  {
    words: "start on a live quiz with no questions",
    async run() {
      const quiz = await insertQuiz(svc.db, { questions: 0 });
      return [await outcome(await svc.rest(newUser(), "POST", `/quizzes/${quiz.quizId}/sessions`))];
    },
  },
  {
    words: "a review start with no question due",
    async run() {
      const user = newUser();
      const quiz = await insertQuiz(svc.db, { questions: 2 });
      const res = await svc.rest(user, "POST", `/quizzes/${quiz.quizId}/sessions`, {
        headers: { "content-type": "application/json" },
        body: '{"mode":"review"}',
      });
      const result = await outcome(res);
      expect(result.body).toMatchObject({ next_due_at: null });
      return [result];
    },
  },
  {
    words: "a missed start with nothing missed",
    async run() {
      const quiz = await insertQuiz(svc.db, { questions: 1 });
      const res = await svc.rest(newUser(), "POST", `/quizzes/${quiz.quizId}/sessions`, {
        headers: { "content-type": "application/json" },
        body: '{"mode":"missed"}',
      });
      return [await outcome(res)];
    },
  },
  {
    words: "a due list page with a `limit` outside",
    async run() {
      const quiz = await insertQuiz(svc.db, { questions: 1 });
      const user = newUser();
      return Promise.all(
        ["limit=0", "limit=101", "cursor=nope"].map(async (query) =>
          outcome(await svc.rest(user, "GET", `/quizzes/${quiz.quizId}/review?${query}`)),
        ),
      );
    },
  },
  {
    words: "a start with a `mode` other than",
    async run() {
      const quiz = await insertQuiz(svc.db, { questions: 2 });
      const res = await svc.rest(newUser(), "POST", `/quizzes/${quiz.quizId}/sessions`, {
        headers: { "content-type": "application/json" },
        body: '{"mode":"quick"}',
      });
      return [await outcome(res)];
    },
  },
  {
    words: "a new answer to a completed session",
    async run() {
      const user = newUser();
      const done = await startSession(user);
      expect((await svc.rest(user, "POST", `/sessions/${done.sessionId}/complete`)).status).toBe(
        200,
      );
      const stale = await startSession(user);
      await svc.db
        .updateTable("practice_sessions")
        .set({ started_at: new Date(svc.clock.now().getTime() - 8 * 86_400_000) })
        .where("id", "=", stale.sessionId)
        .execute();
      return allOf([
        answer(user, done.sessionId, done.quiz.questionIds[0] ?? "", "A1").then(outcome),
        answer(user, stale.sessionId, stale.quiz.questionIds[0] ?? "", "A1").then(outcome),
        svc.rest(user, "POST", `/sessions/${stale.sessionId}/complete`).then(outcome),
      ]);
    },
  },
  {
    words: "a different answer to an answered question",
    async run() {
      const user = newUser();
      const { quiz, sessionId } = await startSession(user);
      const question = quiz.questionIds[0] ?? "";
      expect((await answer(user, sessionId, question, "A1")).status).toBe(201);
      const conflict = await outcome(await answer(user, sessionId, question, "B"));
      expect(conflict.body).toMatchObject({ stored_answer: { user_answer: "A1" } });
      return [conflict];
    },
  },
  {
    words: "the same answer again",
    async run() {
      const user = newUser();
      const { quiz, sessionId } = await startSession(user);
      const question = quiz.questionIds[0] ?? "";
      expect((await answer(user, sessionId, question, "A1")).status).toBe(201);
      const retry = await outcome(await answer(user, sessionId, question, "A1"));
      const complete = () => svc.rest(user, "POST", `/sessions/${sessionId}/complete`);
      expect((await complete()).status).toBe(200);
      return [retry, await outcome(await complete())];
    },
  },
  {
    words: "a body over 64 KiB",
    async run() {
      const quiz = await insertQuiz(svc.db);
      const res = await svc.rest(newUser(), "POST", `/quizzes/${quiz.quizId}/sessions`, {
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ pad: "x".repeat(70 * 1024) }),
      });
      return [await outcome(res)];
    },
  },
  {
    words: "over 16 KiB",
    async run() {
      const cursor = "c".repeat(17 * 1024);
      return [await raw(`GET /quizzes/1/sessions?cursor=${cursor} HTTP/1.1\r\nhost: x\r\n\r\n`)];
    },
  },
  {
    words: "a request that is not HTTP",
    async run() {
      return [await raw("HELLO THERE\r\n\r\n")];
    },
  },
  {
    words: "a method the path does not take",
    async run() {
      const { sessionId } = await startSession(newUser());
      const res = await svc.rest(newUser(), "DELETE", `/sessions/${sessionId}`);
      expect(res.headers.get("allow")).toBe("GET, HEAD");
      return [await outcome(res)];
    },
  },
  {
    words: "database unreachable",
    mysql: true,
    async run() {
      const quiz = await insertQuiz(svc.db);
      const user = newUser();
      await svc.proxy?.cut();
      try {
        return [await outcome(await svc.rest(user, "GET", `/quizzes/${quiz.quizId}/sessions`))];
      } finally {
        await svc.proxy?.restore();
      }
    },
  },
  {
    words: "outlived its deadline",
    mysql: true,
    async run() {
      const quiz = await insertQuiz(svc.db);
      const user = newUser();
      const locker = await createConnection({ uri: svc.database.url });
      await locker.query("LOCK TABLES quizzes WRITE");
      try {
        return [await outcome(await svc.rest(user, "GET", `/quizzes/${quiz.quizId}/sessions`))];
      } finally {
        await locker.query("UNLOCK TABLES");
        await locker.end();
      }
    },
  },
];

const rows = errorRows();

describe("docs/api.md's error table", () => {
  it("has rows, and each row one scenario here and each scenario one row", () => {
    expect(rows.length).toBeGreaterThan(10);
    for (const row of rows) {
      const found = scenarios.filter((s) => row.text.includes(s.words));
      expect(found.length, `scenarios for "${row.text}"`).toBe(1);
    }
    for (const s of scenarios) {
      const found = rows.filter((row) => row.text.includes(s.words));
      expect(found.length, `rows for scenario "${s.words}"`).toBe(1);
    }
  });

  for (const row of rows) {
    const scenario = scenarios.find((s) => row.text.includes(s.words));
    it.skipIf(scenario?.mysql && !mysql)(`${row.text}: ${row.code}, ${row.status}`, async () => {
      const outcomes = (await scenario?.run()) ?? [];
      expect(outcomes.length).toBeGreaterThan(0);
      for (const { status, code } of outcomes) {
        expect({ status, code }).toEqual({ status: row.status, code: row.code });
      }
    });
  }
});
