import { Migrator, sql } from "kysely";
import { afterAll, beforeAll, expect, it } from "vitest";
import { PracticeSessions } from "../../src/app/practice-sessions.js";
import { migrateToLatest } from "../../src/db/migrate.js";
import { migrationProvider } from "../../src/db/migrations/index.js";
import { systemClock } from "../../src/domain/clock.js";
import { createEmptyTestDatabase, type TestDatabase, testStore } from "../support/database.js";
import { insertQuiz, insertSessions } from "../support/fixtures.js";

const store = testStore();
let database: TestDatabase;

beforeAll(async () => {
  database = await createEmptyTestDatabase(store);
});
afterAll(async () => {
  await database?.drop();
});

/** The columns of practice_sessions' index sessions_by_start, in order. */
async function sessionsByStart(): Promise<string[]> {
  const { db } = database;
  if (store === "sqlite") {
    const { rows } = await sql<{ name: string }>`
      SELECT name FROM pragma_index_info('sessions_by_start') ORDER BY seqno`.execute(db);
    return rows.map((r) => r.name);
  }
  const { rows } = await sql<{ c: string }>`
    SELECT COLUMN_NAME AS c FROM information_schema.STATISTICS
    WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'practice_sessions'
      AND INDEX_NAME = 'sessions_by_start' ORDER BY SEQ_IN_INDEX`.execute(db);
  return rows.map((r) => r.c);
}

it("0005 gives existing sessions the full mode, keeps the list's index covering, and adds the memory", async () => {
  const { db } = database;
  const migrator = new Migrator({ db, provider: migrationProvider(store) });
  expect((await migrator.migrateTo("0004-outbox")).error).toBeUndefined();

  const quiz = await insertQuiz(db, { questions: 2 });
  const user = "migrated-learner";
  await insertSessions(db, [
    {
      id: "0199f3c2-5b1e-7c3a-9d4e-000000000001",
      userId: user,
      quizId: quiz.quizId,
      startedAt: new Date(Date.now() - 60_000),
      completedAt: new Date(Date.now() - 30_000),
      totalQuestions: 2,
    },
  ]);

  expect(await migrateToLatest(db)).toContain("0005-question-memory");
  expect(await sessionsByStart()).toEqual([
    "user_id",
    "quiz_id",
    "started_at",
    "id",
    "completed_at",
    "total_questions",
    "correct_answers",
    "answered_questions",
    "mode",
  ]);
  const sessions = new PracticeSessions(db, systemClock);
  const page = await sessions.listSessions(user, { quizId: quiz.quizId });
  expect(page.sessions.map((s) => s.mode)).toEqual(["full"]);

  // The memory table works at once: an answer in a new session is remembered.
  const { session } = await sessions.startSession(user, quiz.quizId);
  await sessions.submitAnswer(user, {
    sessionId: session.id,
    questionId: quiz.questionIds[0] ?? "",
    userAnswer: "no",
  });
  const due = await sessions.listDueQuestions(user, quiz.quizId);
  expect([due.newCount, due.nextDueAt !== null]).toEqual([1, true]);
});
