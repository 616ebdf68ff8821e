import { sql } from "kysely";
import { createConnection } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inlineValues } from "../../src/db/inline-values.js";
import { testStore } from "../support/database.js";
import { insertQuiz, type QuizFixture } from "../support/fixtures.js";
import { startTestService, type TestService } from "../support/service.js";
import { startServiceOn } from "../support/service-start.js";
import { TcpProxy } from "../support/tcp-proxy.js";
import { startThrowawayServers, throwawayUnavailable } from "../support/throwaway-mariadb.js";

// Whatever the server's sql_mode, a caller's text is data: the service's
// statements carry values apart from their text, or as literals no sql_mode
// reads differently, on sessions whose sql_mode it sets and checks. A
// throwaway server, as the global sql_mode changes for every session on it.

const PORT = 13421;

/** The global sql_modes tried, the server's default last. */
const MODES = [
  "STRICT_TRANS_TABLES,NO_BACKSLASH_ESCAPES",
  "ANSI,NO_BACKSLASH_ESCAPES",
  "ANSI",
  "ANSI_QUOTES",
  "ORACLE",
  "EMPTY_STRING_IS_NULL",
  "DEFAULT",
];

/** Answers that end a string, a statement or a comment if read as SQL text. */
const ANSWERS = [
  "x', true, NOW(3)); UPDATE questions SET correct_answer = 0x70776e6564; -- ",
  "A0' OR '1'='1",
  "x\\', 1, NOW(3)); UPDATE questions SET correct_answer = 'pwned'; -- ",
  "\\",
  "back\\slash \\' and \\\" quotes",
  "'; DROP TABLE practice_sessions; #",
  '" OR ""="',
  "/* open comment",
  "-- dash # hash",
  "0x70776e6564",
  "X'41'",
  "nul\0byte",
  "semi;colon;",
  "ünï\u202Ecödé ✓ 🎉",
];

/** Question i's correct answer: the hostile text itself for even i, so both verdicts are tried. */
const correctFor = (i: number) => (i % 2 === 0 ? (ANSWERS[i] as string) : `other ${i}`);

/** Other caller strings: ids, cursors and modes that would break out of a statement's quotes. */
const HOSTILE_IDS = ["1' OR '1'='1", "1\\' OR 1=1 -- ", "1; DELETE FROM questions", "0x31", "1\0"];

const unavailable = testStore() === "mysql" ? throwawayUnavailable() : "the MySQL run only";

describe.skipIf(unavailable !== undefined)("whatever the database's sql_mode", () => {
  let serverUrl: string;
  let stopServers: () => Promise<void>;
  const savedUrl = process.env.TEST_DATABASE_URL;

  beforeAll(async () => {
    const { servers, stop } = await startThrowawayServers([{ name: "sqlmode", port: PORT }]);
    serverUrl = (servers[0] as { url: string }).url;
    stopServers = stop;
  }, 120_000);

  afterAll(async () => {
    if (savedUrl === undefined) delete process.env.TEST_DATABASE_URL;
    else process.env.TEST_DATABASE_URL = savedUrl;
    await stopServers?.();
  });

  it("the literals every value is written as read back as the values in every sql_mode, without the service's own", async () => {
    // 'a"b; …' is printable ASCII with no quote or backslash: written quoted as it stands.
    const values = [
      ...ANSWERS,
      "",
      'a"b; -- c /* d */ # e?',
      -5,
      0.1,
      1.5e300,
      12345678901234567890n,
      true,
      false,
      null,
    ];
    const time = new Date(Date.UTC(2026, 10, 27, 23, 59, 58, 123));
    const text = `SELECT ${values.map((_, i) => `? AS v${i}`).join(", ")}, CAST(? AS DATETIME(3)) AS t /* ? */ -- ?\n`;
    const c = await createConnection({
      uri: serverUrl,
      timezone: "Z",
      supportBigNumbers: true,
      bigNumberStrings: true,
    });
    try {
      for (const mode of MODES) {
        await c.query(`SET SESSION sql_mode = ${mode === "DEFAULT" ? mode : `'${mode}'`}`);
        const [rows] = await c.query(inlineValues(text, [...values, time]));
        const row = (rows as Record<string, unknown>[])[0] as Record<string, unknown>;
        const got = values.map((_, i) => row[`v${i}`]);
        const want = values.map((v) =>
          typeof v === "boolean" ? Number(v) : typeof v === "bigint" ? String(v) : v,
        );
        // Strings come back as text of their bytes (hex literals are binary strings).
        const asText = got.map((v) => (Buffer.isBuffer(v) ? v.toString("utf8") : v));
        expect(asText.map(String), mode).toEqual(want.map(String));
        expect(row.t, mode).toEqual(time);
      }
    } finally {
      await c.end();
    }
  });

  it("two caller texts compare whatever form each is written in, in every sql_mode, on a connection that sets nothing", async () => {
    // Plain ASCII and other text (each written in its own form), and an empty one.
    const texts = ["abc", "ABC", "é", "É", "😀 𝄞", "", "a'b", "x"];
    // A connection as mysql2 opens it: its collation (utf8mb4_unicode_ci) is not utf8mb4's default.
    const c = await createConnection({ uri: serverUrl });
    try {
      for (const mode of MODES) {
        await c.query(`SET SESSION sql_mode = ${mode === "DEFAULT" ? mode : `'${mode}'`}`);
        for (const a of texts) {
          for (const b of texts) {
            const [rows] = await c.query(
              inlineValues("SELECT ? = ? AS eq, ? IN (?, ?) AS within, STRCMP(?, ?) AS cmp", [
                a,
                b,
                a,
                b,
                "x",
                a,
                b,
              ]),
            );
            const row = (rows as Record<string, unknown>[])[0];
            // utf8mb4's default collation on MariaDB: case- and accent-insensitive.
            const same = a.localeCompare(b, "en", { sensitivity: "base" }) === 0;
            expect(Number(row?.eq), `${mode}: ${a} = ${b}`).toBe(same ? 1 : 0);
            expect(Number(row?.within), `${mode}: ${a} IN (${b}, x)`).toBe(
              same || a === "x" ? 1 : 0,
            );
            expect(row?.cmp === 0, `${mode}: STRCMP(${a}, ${b})`).toBe(same);
          }
        }
      }
    } finally {
      await c.end();
    }
  });

  it("a server whose sessions keep a mode the service cannot use stops the start before its port opens, in one line naming it", async () => {
    const root = await createConnection({ uri: serverUrl });
    await root.query("SET GLOBAL sql_mode = 'NO_BACKSLASH_ESCAPES'");
    await root.end();
    // A proxy that turns the service's SET SESSION sql_mode into a user variable's assignment.
    const server = new URL(serverUrl);
    const proxy = new TcpProxy(server.hostname, Number(server.port));
    await proxy.start();
    proxy.replaceOn("SET SESSION sql_mode", "SET @ignored_sql_mod");
    try {
      const run = await startServiceOn(
        `mysql://root@127.0.0.1:${proxy.port}/practice_sqlmode_refused`,
      );
      expect(run.errorLines, run.stderr).toHaveLength(1);
      expect(run.errorLines[0]).toMatch(/keeps sql_mode NO_BACKSLASH_ESCAPES/);
      expect(run.errorLines[0]).toMatch(/remove it from the server's sql_mode/);
      expect(run.code).toBe(1);
    } finally {
      await proxy.cut();
    }
  }, 120_000);

  for (const mode of MODES) {
    describe(`global sql_mode ${mode}`, () => {
      let svc: TestService;
      let quiz: QuizFixture;

      beforeAll(async () => {
        const root = await createConnection({ uri: serverUrl });
        await root.query(`SET GLOBAL sql_mode = ${mode === "DEFAULT" ? mode : `'${mode}'`}`);
        await root.end();
        process.env.TEST_DATABASE_URL = serverUrl;
        svc = await startTestService();
        quiz = await insertQuiz(svc.db, { questions: ANSWERS.length });
        // Written apart from the code under test, values bound.
        const c = await createConnection({ uri: svc.database.url });
        for (const [i, id] of quiz.questionIds.entries()) {
          await c.execute("UPDATE questions SET correct_answer = ? WHERE id = ?", [
            correctFor(i),
            id,
          ]);
        }
        await c.end();
      }, 120_000);

      afterAll(async () => {
        await svc?.close();
      });

      it("every session of the service has the sql_mode flags that change statement text removed", async () => {
        const { database } = svc;
        const c = await createConnection({ uri: database.url });
        try {
          const [global] = await c.query("SELECT @@GLOBAL.sql_mode AS mode");
          const expected = mode === "DEFAULT" ? "STRICT_TRANS_TABLES" : mode.split(",")[0];
          expect(String((global as { mode: string }[])[0]?.mode)).toContain(expected);
        } finally {
          await c.end();
        }
        // The service's pool (svc.serviceDb) as the service opens it.
        const { rows } = await sql<{ mode: string }>`SELECT @@SESSION.sql_mode AS mode`.execute(
          svc.serviceDb,
        );
        const flags = String(rows[0]?.mode).split(",");
        for (const unsafe of [
          "NO_BACKSLASH_ESCAPES",
          "ANSI_QUOTES",
          "PIPES_AS_CONCAT",
          "ANSI",
          "EMPTY_STRING_IS_NULL",
          "SIMULTANEOUS_ASSIGNMENT",
        ])
          expect(flags).not.toContain(unsafe);
      });

      it("answers over REST, Connect and gRPC are stored byte for byte with the is_correct the reply says; nothing else changes", async () => {
        const before = await contentChecksum(svc.database.url);
        const stored: { user: string; sessionId: string; i: number; isCorrect: boolean }[] = [];
        for (const transport of ["rest", "connect", "grpc"] as const) {
          const user = `${transport}-user`;
          const start = await svc.rest(user, "POST", `/quizzes/${quiz.quizId}/sessions`);
          expect(start.status).toBe(201);
          const sessionId = ((await start.json()) as { id: string }).id;
          for (const [i, text] of ANSWERS.entries()) {
            const questionId = quiz.questionIds[i] as string;
            const isCorrect = await submit(svc, transport, user, sessionId, questionId, text);
            expect(isCorrect, `${transport} answer ${JSON.stringify(text)}`).toBe(i % 2 === 0);
            stored.push({ user, sessionId, i, isCorrect: isCorrect === true });
          }
        }
        // The rows, read with values apart from the text.
        const c = await createConnection({ uri: svc.database.url });
        try {
          const [rows] = await c.execute(
            "SELECT a.session_id, a.question_id, CAST(a.user_answer AS BINARY) AS bytes, a.is_correct FROM practice_session_answers a ORDER BY a.id",
          );
          const answers = rows as {
            session_id: string;
            question_id: number | string;
            bytes: Buffer;
            is_correct: number;
          }[];
          expect(answers).toHaveLength(stored.length);
          for (const [n, want] of stored.entries()) {
            const row = answers[n];
            expect(row?.session_id).toBe(want.sessionId);
            expect(String(row?.question_id)).toBe(quiz.questionIds[want.i]);
            expect(row?.bytes.equals(Buffer.from(ANSWERS[want.i] as string, "utf8"))).toBe(true);
            expect(row?.is_correct).toBe(want.isCorrect ? 1 : 0);
          }
          const [sessions] = await c.execute(
            "SELECT user_id, answered_questions, correct_answers FROM practice_sessions ORDER BY user_id",
          );
          const half = Math.ceil(ANSWERS.length / 2);
          expect(sessions).toEqual(
            ["connect-user", "grpc-user", "rest-user"].map((user_id) => ({
              user_id,
              answered_questions: ANSWERS.length,
              correct_answers: half,
            })),
          );
        } finally {
          await c.end();
        }
        expect(await contentChecksum(svc.database.url)).toEqual(before);
      });

      it("other caller strings (quiz id, session id, cursor, mode, question id, user id) are data too", async () => {
        const before = await contentChecksum(svc.database.url);
        const sessionsBefore = await rowCount(svc.database.url, "practice_sessions");
        for (const id of HOSTILE_IDS) {
          const path = encodeURIComponent(id);
          const list = await svc.rest("u", "GET", `/quizzes/${path}/sessions`);
          expect([400, 404]).toContain(list.status);
          const start = await svc.rest("u", "POST", `/quizzes/${path}/sessions`);
          expect([400, 404]).toContain(start.status);
          const get = await svc.rest("u", "GET", `/sessions/${path}`);
          expect([400, 404]).toContain(get.status);
          const cursor = await svc.rest(
            "u",
            "GET",
            `/quizzes/${quiz.quizId}/sessions?cursor=${path}`,
          );
          expect(cursor.status).toBe(400);
          const mode = await svc.rest("u", "POST", `/quizzes/${quiz.quizId}/sessions`, {
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ mode: id }),
          });
          expect(mode.status).toBe(400);
        }
        expect(await rowCount(svc.database.url, "practice_sessions")).toBe(sessionsBefore);
        // Hostile user ids (from the token's `sub`) are stored as they are.
        const users = ["o'brien\\", "x', 'y'); DELETE FROM questions; -- ", '" OR ""="'];
        for (const user of users) {
          const start = await svc.rest(user, "POST", `/quizzes/${quiz.quizId}/sessions`);
          expect(start.status).toBe(201);
          const sessionId = ((await start.json()) as { id: string }).id;
          const answer = await svc.rest(user, "POST", `/sessions/${sessionId}/answers`, {
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ question_id: HOSTILE_IDS[0], user_answer: "x" }),
          });
          expect([400, 404]).toContain(answer.status);
          const list = await svc.rest(user, "GET", `/quizzes/${quiz.quizId}/sessions`);
          expect(((await list.json()) as { sessions: { id: string }[] }).sessions).toEqual([
            expect.objectContaining({ id: sessionId }),
          ]);
        }
        const c = await createConnection({ uri: svc.database.url });
        try {
          const [rows] = await c.execute(
            "SELECT CAST(user_id AS BINARY) AS bytes FROM practice_sessions WHERE started_at IS NOT NULL ORDER BY started_at, id",
          );
          const ids = (rows as { bytes: Buffer }[]).map((r) => r.bytes.toString("utf8"));
          for (const user of users) expect(ids).toContain(user);
        } finally {
          await c.end();
        }
        expect(await contentChecksum(svc.database.url)).toEqual(before);
      });
    });
  }
});

/** An answer over one transport; the reply's is_correct. */
async function submit(
  svc: TestService,
  transport: "rest" | "connect" | "grpc",
  user: string,
  sessionId: string,
  questionId: string,
  text: string,
): Promise<boolean | undefined> {
  if (transport === "rest") {
    const res = await svc.rest(user, "POST", `/sessions/${sessionId}/answers`, {
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ question_id: questionId, user_answer: text }),
    });
    expect(res.status, await res.clone().text()).toBe(201);
    const body = (await res.json()) as { answer: { user_answer: string; is_correct: boolean } };
    expect(body.answer.user_answer).toBe(text);
    return body.answer.is_correct;
  }
  const request = { sessionId, questionId, userAnswer: text };
  const headers = await svc.auth(user);
  const res =
    transport === "connect"
      ? await svc.connect.submitAnswer(request, { headers })
      : await svc.grpc.submitAnswer(request, headers);
  expect(res.answer?.userAnswer).toBe(text);
  return res.answer?.isCorrect;
}

/** Checksums of the content tables (study guides, quizzes, questions): what an injection would change. */
async function contentChecksum(url: string): Promise<unknown> {
  const c = await createConnection({ uri: url });
  try {
    const [rows] = await c.query("CHECKSUM TABLE study_guides, quizzes, questions EXTENDED");
    return rows;
  } finally {
    await c.end();
  }
}

async function rowCount(url: string, table: string): Promise<number> {
  const c = await createConnection({ uri: url });
  try {
    const [rows] = await c.query(`SELECT COUNT(*) AS n FROM ${table}`);
    return Number((rows as { n: unknown }[])[0]?.n);
  } finally {
    await c.end();
  }
}
