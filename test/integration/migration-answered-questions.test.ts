import { Migrator } from "kysely";
import { afterAll, beforeAll, expect, it } from "vitest";
import { migrateToLatest } from "../../src/db/migrate.js";
import { migrationProvider } from "../../src/db/migrations/index.js";
import { createEmptyTestDatabase, type TestDatabase, testStore } from "../support/database.js";
import { insertAnswer, insertQuiz, insertSessions } from "../support/fixtures.js";

const store = testStore();
let database: TestDatabase;

beforeAll(async () => {
  database = await createEmptyTestDatabase(store);
});
afterAll(async () => {
  await database?.drop();
});

it("0003 adds answered_questions and counts the answers of existing sessions", async () => {
  const { db } = database;
  const migrator = new Migrator({ db, provider: migrationProvider(store) });
  const before = await migrator.migrateTo("0002-user-id-no-pad");
  expect(before.error).toBeUndefined();

  const quiz = await insertQuiz(db, { questions: 3 });
  const ids = ["0199f3c2-5b1e-7c3a-9d4e-000000000001", "0199f3c2-5b1e-7c3a-9d4e-000000000002"];
  await insertSessions(
    db,
    ids.map((id, i) => ({
      id,
      userId: `migrated-${i}`,
      quizId: quiz.quizId,
      startedAt: new Date(),
    })),
  );
  for (const [i, questionId] of quiz.questionIds.slice(0, 2).entries()) {
    await insertAnswer(db, {
      sessionId: ids[0] ?? "",
      questionId,
      userAnswer: "x",
      isCorrect: false,
      answeredAt: new Date(Date.now() + i),
    });
  }

  expect(await migrateToLatest(db)).toContain("0003-answered-questions");
  const rows = await db
    .selectFrom("practice_sessions")
    .select(["id", "answered_questions"])
    .orderBy("id")
    .execute();
  expect(rows).toEqual([
    { id: ids[0], answered_questions: 2 },
    { id: ids[1], answered_questions: 0 },
  ]);
});
