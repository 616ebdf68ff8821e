import { Code } from "@connectrpc/connect";
import { beforeAll, describe, expect, it } from "vitest";
import { type SessionStatus, STALE_AFTER_MS } from "../../src/domain/session.js";
import {
  insertQuiz,
  insertSessions,
  newestFirst,
  type QuizFixture,
  type SessionRow,
  sessionIdFor,
} from "../support/fixtures.js";
import { newUser, rejection, useCaseWorld } from "../support/use-cases.js";

// The spec's list rules, on the use case itself (no transport).
const w = useCaseWorld();
let quiz: QuizFixture;
let history: SessionRow[];
const OWNER = "walker";

beforeAll(async () => {
  quiz = await insertQuiz(w.db, { createdBy: "the-author" });
  const base = Date.parse("2026-06-01T00:00:00.000Z");
  // 60 sessions: 20 share one started_at, ids shuffled against time (the id tie-break matters).
  history = Array.from({ length: 60 }, (_, i) => {
    const startedAt = new Date(i < 20 ? base : base + Math.floor(i / 2) * 1000);
    return {
      id: sessionIdFor((i * 7919) % 1000),
      userId: OWNER,
      quizId: quiz.quizId,
      startedAt,
      completedAt: i === 37 ? null : new Date(startedAt.getTime() + 60_000),
      totalQuestions: 8,
      correctAnswers: i % 9,
    };
  });
  await insertSessions(w.db, [
    ...history,
    {
      id: sessionIdFor(5000),
      userId: "the-author",
      quizId: quiz.quizId,
      startedAt: new Date(base),
    },
  ]);
});

/** Every page of a walk with `limit`, and the ids in the order seen. */
async function walk(user: string, status: SessionStatus | undefined, limit: number) {
  const ids: string[] = [];
  let cursor: string | undefined;
  for (let pages = 0; pages < 100; pages++) {
    const page = await w.sessions.listSessions(user, {
      quizId: quiz.quizId,
      status,
      limit,
      cursor,
    });
    ids.push(...page.sessions.map((s) => s.id));
    expect(page.hasMore).toBe(page.nextCursor !== null);
    if (!page.hasMore) return ids;
    expect(page.sessions).toHaveLength(limit);
    cursor = page.nextCursor ?? undefined;
  }
  throw new Error("more than 100 pages");
}

describe("listSessions", () => {
  it.each([
    ["both", undefined, () => true],
    ["active", "active", (s: SessionRow) => !s.completedAt],
    ["completed", "completed", (s: SessionRow) => !!s.completedAt],
  ] as const)(
    "pages through %s newest first (started_at, then id), each session once",
    async (_n, status, keep) => {
      const expected = history
        .filter(keep)
        .sort(newestFirst)
        .map((s) => s.id);
      expect(await walk(OWNER, status, 7)).toEqual(expected);
    },
  );

  it("pages 20 by default, up to 100", async () => {
    const first = await w.sessions.listSessions(OWNER, { quizId: quiz.quizId });
    expect(first.sessions).toHaveLength(20);
    const big = await w.sessions.listSessions(OWNER, { quizId: quiz.quizId, limit: 100 });
    expect(big.sessions).toHaveLength(60);
    expect(big).toMatchObject({ hasMore: false, nextCursor: null });
  });

  it("gives summaries whose score is computed for completed sessions only", async () => {
    const page = await w.sessions.listSessions(OWNER, { quizId: quiz.quizId, limit: 100 });
    for (const s of page.sessions) {
      const row = history.find((h) => h.id === s.id);
      expect(s).toEqual({
        id: row?.id,
        quizId: quiz.quizId,
        startedAt: row?.startedAt,
        completedAt: row?.completedAt ?? null,
        totalQuestions: 8,
        correctAnswers: row?.correctAnswers,
        answeredQuestions: 0,
        scorePercentage: row?.completedAt
          ? Math.round(((row.correctAnswers ?? 0) * 100) / 8)
          : null,
        expiresAt: row?.completedAt
          ? null
          : new Date((row?.startedAt.getTime() ?? 0) + STALE_AFTER_MS),
        mode: "full",
      });
      expect("answers" in s).toBe(false);
    }
  });

  it("shows only the caller's sessions, even to the quiz's author", async () => {
    const author = await w.sessions.listSessions("the-author", { quizId: quiz.quizId });
    expect(author.sessions.map((s) => s.id)).toEqual([sessionIdFor(5000)]);
    const stranger = await w.sessions.listSessions(newUser(), { quizId: quiz.quizId });
    expect(stranger).toEqual({ sessions: [], nextCursor: null, hasMore: false });
  });

  it("is not_found, one message, for a missing, soft-deleted or guide-deleted quiz and ids that name none", async () => {
    const deleted = await insertQuiz(w.db, { quizDeleted: true });
    const guideDeleted = await insertQuiz(w.db, { studyGuideDeleted: true });
    await insertSessions(w.db, [
      { id: sessionIdFor(7001), userId: OWNER, quizId: deleted.quizId, startedAt: new Date() },
      { id: sessionIdFor(7002), userId: OWNER, quizId: guideDeleted.quizId, startedAt: new Date() },
    ]);
    for (const quizId of ["424242", deleted.quizId, guideDeleted.quizId, "abc", "0", "-5"]) {
      const err = await rejection(w.sessions.listSessions(OWNER, { quizId }), Code.NotFound);
      expect(err.rawMessage).toBe("quiz not found");
    }
  });

  // The page size's range is the request's rule, checked before a use case runs
  // (test/in-process/request-rules.test.ts); a cursor's meaning is the use case's.
  it.each([[{ cursor: "bm90LWEtY3Vyc29y" }], [{ cursor: "%%%" }]])(
    "is invalid_argument for %j, naming the cursor",
    async (bad) => {
      const err = await rejection(
        w.sessions.listSessions(OWNER, { quizId: quiz.quizId, ...bad }),
        Code.InvalidArgument,
      );
      expect(err).toMatchObject({
        violations: [
          {
            field: "cursor",
            rule: "cursor.issued",
            message: "cursor is not a next_cursor this service returned",
          },
        ],
      });
    },
  );
});
