import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DatabaseHandle, openDatabase } from "../../src/db/connect.js";
import { createTestDatabase, type TestDatabase, testStore } from "../support/database.js";
import { insertQuiz } from "../support/fixtures.js";
import { startTestService, type TestService } from "../support/service.js";
import { defaultDatabaseLimits } from "../support/settings.js";

// Several statements in one request are a stacked query waiting for caller text: only the
// connections that carry an answer's writes (answer-writes.ts) take them; every other
// connection refuses a second statement, whatever the first.

const STACKED = "SELECT 1 AS one; DELETE FROM questions";

/** errno of a syntax error: the server reads the text as one statement, and it is not. */
const ER_PARSE_ERROR = 1064;

describe.skipIf(testStore() !== "mysql")("a stacked statement", () => {
  let database: TestDatabase;
  let handle: DatabaseHandle;

  beforeAll(async () => {
    database = await createTestDatabase();
    await insertQuiz(database.db, { questions: 2 });
    handle = openDatabase({
      url: database.url,
      poolSize: 2,
      connectTimeoutMs: 2000,
      limits: defaultDatabaseLimits(),
    });
  });

  afterAll(async () => {
    await handle?.close();
    await database?.drop();
  });

  it("is refused on the users' connections and on the operators' (metrics), and runs nothing", async () => {
    const errno = (err: unknown) => (err as { errno?: unknown }).errno;
    for (const db of [handle.db, handle.opsDb]) {
      const refused = await sql
        .raw(STACKED)
        .execute(db)
        .then(() => undefined, errno);
      expect(refused).toBe(ER_PARSE_ERROR);
    }
    const left = await handle.db
      .selectFrom("questions")
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .executeTakeFirstOrThrow();
    expect(Number(left.n)).toBe(2);
  });
});

describe.skipIf(testStore() !== "mysql")("an answer's writes", () => {
  let svc: TestService;

  beforeAll(async () => {
    svc = await startTestService();
  });

  afterAll(async () => {
    await svc?.close();
  });

  it("still go in one request: the answer, the memory and the event stored", async () => {
    const quiz = await insertQuiz(svc.db, { questions: 1 });
    const start = await svc.rest("stacked", "POST", `/quizzes/${quiz.quizId}/sessions`);
    const { id } = (await start.json()) as { id: string };
    const answer = await svc.rest("stacked", "POST", `/sessions/${id}/answers`, {
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ question_id: quiz.questionIds[0], user_answer: "A1" }),
    });
    expect(answer.status).toBe(201);
    const count = async (table: "practice_session_answers" | "practice_question_memory") =>
      Number(
        (
          await svc.db
            .selectFrom(table)
            .select((eb) => eb.fn.countAll<number>().as("n"))
            .executeTakeFirstOrThrow()
        ).n,
      );
    expect(await count("practice_session_answers")).toBe(1);
    expect(await count("practice_question_memory")).toBe(1);
    // A stacked statement on the users' pool is still refused after the answer.
    const refused = await sql
      .raw(STACKED)
      .execute(svc.serviceDb)
      .then(
        () => undefined,
        (err: { errno?: unknown }) => err.errno,
      );
    expect(refused).toBe(ER_PARSE_ERROR);
  });
});
