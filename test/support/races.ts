import { randomUUID } from "node:crypto";
import { sql } from "kysely";
import { expect } from "vitest";
import type { Db } from "../../src/db/database.js";
import { STALE_AFTER_MS } from "../../src/domain/session.js";
import { testStore } from "./database.js";
import { insertAnswer, insertQuiz, insertSessions } from "./fixtures.js";
import {
  integrityViolations,
  NO_VIOLATIONS,
  type Outcome,
  percentile,
  startVia,
  TRANSPORTS,
  tally,
} from "./reliability.js";
import type { TestService } from "./service.js";

/**
 * Records every row inserted into or deleted from practice_sessions (a test
 * table filled by triggers, in each store's syntax), so a test can count
 * creations and deletions exactly, whoever made them. Rolled-back inserts
 * leave no trace.
 */
export async function installSessionAudit(db: Db): Promise<void> {
  if (testStore() === "sqlite") {
    await sql`CREATE TABLE IF NOT EXISTS session_audit (
      seq INTEGER PRIMARY KEY AUTOINCREMENT,
      op TEXT NOT NULL, session_id TEXT NOT NULL, user_id TEXT NOT NULL)`.execute(db);
    await sql`CREATE TRIGGER IF NOT EXISTS audit_insert AFTER INSERT ON practice_sessions
      FOR EACH ROW BEGIN INSERT INTO session_audit (op, session_id, user_id)
      VALUES ('insert', NEW.id, NEW.user_id); END`.execute(db);
    await sql`CREATE TRIGGER IF NOT EXISTS audit_delete AFTER DELETE ON practice_sessions
      FOR EACH ROW BEGIN INSERT INTO session_audit (op, session_id, user_id)
      VALUES ('delete', OLD.id, OLD.user_id); END`.execute(db);
    return;
  }
  await sql`CREATE TABLE IF NOT EXISTS session_audit (
    seq BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY,
    op CHAR(6) NOT NULL, session_id CHAR(36) NOT NULL, user_id VARCHAR(255) NOT NULL)`.execute(db);
  await sql`CREATE TRIGGER IF NOT EXISTS audit_insert AFTER INSERT ON practice_sessions
    FOR EACH ROW INSERT INTO session_audit (op, session_id, user_id)
    VALUES ('insert', NEW.id, NEW.user_id)`.execute(db);
  await sql`CREATE TRIGGER IF NOT EXISTS audit_delete AFTER DELETE ON practice_sessions
    FOR EACH ROW INSERT INTO session_audit (op, session_id, user_id)
    VALUES ('delete', OLD.id, OLD.user_id)`.execute(db);
}

export async function auditOf(db: Db, user: string) {
  const { rows } = await sql<{ op: string; session_id: string }>`
    SELECT op, session_id FROM session_audit WHERE user_id = ${user} ORDER BY seq`.execute(db);
  return rows;
}

/** `n` simultaneous starts by `user` on `quizId`, round-robin over every transport. */
export async function raceStarts(svc: TestService, user: string, quizId: string, n: number) {
  // Sign once so every call is in flight before the first answer comes back.
  await svc.auth(user);
  const t0 = performance.now();
  const outcomes = await Promise.all(
    Array.from({ length: n }, (_, i) =>
      startVia(svc, TRANSPORTS[i % TRANSPORTS.length] ?? "rest", user, quizId),
    ),
  );
  return { outcomes, wallMs: Math.round(performance.now() - t0) };
}

export function raceFigures(outcomes: Outcome[], wallMs: number) {
  const ms = outcomes.map((o) => o.ms);
  return {
    calls: outcomes.length,
    outcomes: tally(outcomes, (o) =>
      o.code !== "ok" ? o.code : o.created ? "created" : "resumed",
    ),
    wallMs,
    p50Ms: percentile(ms, 50),
    p99Ms: percentile(ms, 99),
  };
}

/** Asserts one creation, n-1 resumes of that same session, one row, full snapshot. */
export async function expectOneWinner(svc: TestService, user: string, outcomes: Outcome[]) {
  expect(outcomes.filter((o) => o.code !== "ok")).toEqual([]);
  expect(outcomes.filter((o) => o.created)).toHaveLength(1);
  const ids = new Set(outcomes.map((o) => o.id));
  expect(ids.size).toBe(1);
  const rows = await svc.db
    .selectFrom("practice_sessions")
    .select("id")
    .where("user_id", "=", user)
    .execute();
  expect(rows.map((r) => r.id)).toEqual([...ids]);
  expect(await integrityViolations(svc.db)).toEqual(NO_VIOLATIONS);
  return [...ids][0] ?? "";
}

/** A quiz, and `user`'s in-progress session on it that started 8 days ago, with an answer. */
export async function staleSessionFixture(svc: TestService, user: string, questions = 4) {
  const quiz = await insertQuiz(svc.db, { questions });
  const startedAt = new Date(svc.clock.now().getTime() - STALE_AFTER_MS - 86_400_000);
  const staleId = randomUUID();
  await insertSessions(svc.db, [
    { id: staleId, userId: user, quizId: quiz.quizId, startedAt, totalQuestions: questions },
  ]);
  await svc.db
    .insertInto("practice_session_questions")
    .values(
      quiz.questionIds.map((questionId, i) => ({
        session_id: staleId,
        position: i + 1,
        question_id: questionId,
      })),
    )
    .execute();
  await insertAnswer(svc.db, {
    sessionId: staleId,
    questionId: quiz.questionIds[0] ?? "",
    userAnswer: "A1",
    isCorrect: true,
    answeredAt: startedAt,
  });
  return { quiz, staleId };
}
