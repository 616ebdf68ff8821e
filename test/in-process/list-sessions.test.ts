import { Code, ConnectError } from "@connectrpc/connect";
import { beforeAll, describe, expect, it } from "vitest";
import { SessionStatus } from "../../gen/practice/v1/practice_session_service_pb.js";
import type { PageJson } from "../../src/rest/schemas.js";
import {
  insertQuiz,
  insertSessions,
  newestFirst,
  type QuizFixture,
  type SessionRow,
  sessionIdFor,
} from "../support/fixtures.js";
import { fileService } from "../support/in-process.js";

const svc = await fileService();
let quiz: QuizFixture;
let history: SessionRow[];
const OWNER = "walker";

beforeAll(async () => {
  quiz = await insertQuiz(svc.db, { createdBy: "the-author" });
  const base = Date.parse("2026-06-01T00:00:00.000Z");
  // 250 sessions: 100 share one started_at, the rest come in pairs; ids are
  // shuffled against time so that the id tie-break matters.
  history = Array.from({ length: 250 }, (_, i) => {
    const startedAt = new Date(i < 100 ? base : base + Math.floor(i / 2) * 1000);
    const completed = i !== 137; // one in progress: the unique key allows one
    return {
      id: sessionIdFor((i * 7919) % 1000),
      userId: OWNER,
      quizId: quiz.quizId,
      startedAt,
      completedAt: completed ? new Date(startedAt.getTime() + 60_000) : null,
      totalQuestions: 3,
      correctAnswers: i % 4 === 3 ? 3 : i % 3,
    };
  });
  const other = await insertQuiz(svc.db);
  await insertSessions(svc.db, [
    ...history,
    // Noise that must never show: other users, including the quiz's author, and another quiz.
    ...Array.from({ length: 30 }, (_, i) => ({
      id: sessionIdFor(5000 + i),
      userId: i % 2 ? "someone-else" : "the-author",
      quizId: quiz.quizId,
      startedAt: new Date(base + i),
      completedAt: new Date(base + i + 1),
    })),
    {
      id: sessionIdFor(6000),
      userId: OWNER,
      quizId: other.quizId,
      startedAt: new Date(base),
      completedAt: null,
    },
  ]);
});

async function restPage(user: string, query: string) {
  const res = await svc.rest(user, "GET", `/quizzes/${quiz.quizId}/sessions${query}`);
  return { status: res.status, body: (await res.json()) as PageJson };
}

describe("listing sessions", () => {
  it.each([
    ["no filter", undefined, () => true],
    ["active", "active", (s: SessionRow) => !s.completedAt],
    ["completed", "completed", (s: SessionRow) => !!s.completedAt],
  ] as const)(
    "walks every page over REST with %s: each session once, in order, has_more false only at the end",
    async (_n, status, keep) => {
      const expected = history
        .filter(keep)
        .sort(newestFirst)
        .map((s) => s.id);
      const seen: string[] = [];
      let cursor: string | null = null;
      for (let pages = 0; pages < 100; pages++) {
        const params = new URLSearchParams({ limit: "7" });
        if (status) params.set("status", status);
        if (cursor) params.set("cursor", cursor);
        const { status: code, body } = await restPage(OWNER, `?${params}`);
        expect(code).toBe(200);
        seen.push(...body.sessions.map((s: { id: string }) => s.id));
        const last = seen.length === expected.length;
        expect(body.has_more).toBe(!last);
        expect(body.next_cursor === null).toBe(last);
        if (last) break;
        expect(body.sessions).toHaveLength(7);
        cursor = body.next_cursor;
      }
      expect(seen).toEqual(expected);
    },
  );

  it.each([
    ["no filter", SessionStatus.UNSPECIFIED, () => true],
    ["active", SessionStatus.ACTIVE, (s: SessionRow) => !s.completedAt],
    ["completed", SessionStatus.COMPLETED, (s: SessionRow) => !!s.completedAt],
  ] as const)("walks every page over RPC with %s", async (_n, status, keep) => {
    const expected = history
      .filter(keep)
      .sort(newestFirst)
      .map((s) => s.id);
    const headers = await svc.auth(OWNER);
    const seen: string[] = [];
    let cursor = "";
    for (let pages = 0; pages < 100; pages++) {
      const page = await svc.rpc.listSessions(
        { quizId: quiz.quizId, status, limit: 33, cursor },
        { headers },
      );
      seen.push(...page.sessions.map((s) => s.id));
      const last = seen.length === expected.length;
      expect(page.hasMore).toBe(!last);
      expect(page.nextCursor === "").toBe(last);
      if (last) break;
      cursor = page.nextCursor;
    }
    expect(seen).toEqual(expected);
  });

  it("pages with the default size of 20 and at most 100", async () => {
    const first = await restPage(OWNER, "");
    expect(first.body.sessions).toHaveLength(20);
    const big = await restPage(OWNER, "?limit=100");
    expect(big.body.sessions).toHaveLength(100);
    const grpc = await svc.rpc.listSessions(
      { quizId: quiz.quizId },
      { headers: await svc.auth(OWNER) },
    );
    expect(grpc.sessions).toHaveLength(20);
  });

  it("returns summaries without answers, with the score for completed sessions only", async () => {
    const { body } = await restPage(OWNER, "?limit=100");
    for (const item of body.sessions) {
      expect(Object.keys(item).sort()).toEqual([
        "answered_questions",
        "completed_at",
        "correct_answers",
        "expires_at",
        "id",
        "mode",
        "quiz_id",
        "score_percentage",
        "started_at",
        "total_questions",
      ]);
      const row = history.find((h) => h.id === item.id);
      expect(row).toBeDefined();
      expect(item.started_at).toBe(row?.startedAt.toISOString());
      expect(item.answered_questions).toBe(0);
      expect(item.expires_at).toBe(
        row?.completedAt
          ? null
          : new Date((row?.startedAt.getTime() ?? 0) + 7 * 86_400_000).toISOString(),
      );
      if (row?.completedAt) {
        expect(item.completed_at).toBe(row.completedAt.toISOString());
        expect(item.score_percentage).toBe(Math.round(((row.correctAnswers ?? 0) / 3) * 100));
      } else {
        expect(item.completed_at).toBeNull();
        expect(item.score_percentage).toBeNull();
      }
    }
    const active = await restPage(OWNER, "?status=active");
    expect(active.body.sessions).toEqual([
      expect.objectContaining({ id: history[137]?.id, completed_at: null, score_percentage: null }),
    ]);
  });

  it("shows a user only their own sessions: the quiz's author sees none of the walker's", async () => {
    const author = await restPage("the-author", "?limit=100");
    expect(author.body.sessions).toHaveLength(15);
    const stranger = await restPage("nobody", "");
    expect(stranger).toEqual({
      status: 200,
      body: { sessions: [], next_cursor: null, has_more: false },
    });
  });

  it("gives an empty page after the last session", async () => {
    const oldest = [...history].sort(newestFirst).at(-1) as SessionRow;
    const { encodeCursor } = await import("../../src/domain/cursor.js");
    const cursor = encodeCursor({ startedAt: oldest.startedAt, id: oldest.id });
    const { body } = await restPage(OWNER, `?cursor=${cursor}`);
    expect(body).toEqual({ sessions: [], next_cursor: null, has_more: false });
  });

  it("serves the same page under /api and over Connect JSON", async () => {
    const plain = await svc
      .rest(OWNER, "GET", `/quizzes/${quiz.quizId}/sessions?limit=3`)
      .then((r) => r.json() as Promise<PageJson>);
    const api = await svc
      .rest(OWNER, "GET", `/api/quizzes/${quiz.quizId}/sessions?limit=3`)
      .then((r) => r.json() as Promise<PageJson>);
    expect(api).toEqual(plain);
    const connect = await svc.rpc.listSessions(
      { quizId: quiz.quizId, limit: 3 },
      { headers: await svc.auth(OWNER) },
    );
    expect(connect.sessions.map((s) => s.id)).toEqual(
      plain.sessions.map((s: { id: string }) => s.id),
    );
    expect(connect.nextCursor).toBe(plain.next_cursor);
  });
});

describe("list errors", () => {
  const NOT_FOUND =
    '{"type":"about:blank","title":"Not Found","status":404,"detail":"quiz not found","code":"not_found"}';

  it("is 404 with one body for a missing quiz, a soft-deleted quiz and a quiz under a soft-deleted study guide", async () => {
    const deletedQuiz = await insertQuiz(svc.db, { quizDeleted: true });
    const deletedGuide = await insertQuiz(svc.db, { studyGuideDeleted: true });
    // The caller once had sessions on them: still 404.
    await insertSessions(svc.db, [
      {
        id: sessionIdFor(7001),
        userId: OWNER,
        quizId: deletedQuiz.quizId,
        startedAt: new Date(),
        completedAt: new Date(),
      },
      {
        id: sessionIdFor(7002),
        userId: OWNER,
        quizId: deletedGuide.quizId,
        startedAt: new Date(),
        completedAt: new Date(),
      },
    ]);
    for (const quizId of ["424242", deletedQuiz.quizId, deletedGuide.quizId, "abc", "0", "-5"]) {
      const res = await svc.rest(OWNER, "GET", `/quizzes/${quizId}/sessions`);
      expect(res.status).toBe(404);
      expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
      expect(await res.text()).toBe(NOT_FOUND);
      await expect(
        svc.rpc.listSessions({ quizId }, { headers: await svc.auth(OWNER) }),
      ).rejects.toMatchObject({
        code: 5,
        rawMessage: "quiz not found",
      });
    }
  });

  it.each([
    "?status=bogus",
    "?status=",
    "?status=ACTIVE",
    "?status=active&status=completed",
    "?limit=0",
    "?limit=101",
    "?limit=-1",
    "?limit=abc",
    "?limit=1.5",
    "?limit=",
    "?limit=99999999999999999999",
    "?cursor=%%%",
    "?cursor=bm90LWEtY3Vyc29y",
  ])("is 400 invalid_argument for %s", async (query) => {
    const res = await svc.rest(OWNER, "GET", `/quizzes/${quiz.quizId}/sessions${query}`);
    expect(res.status).toBe(400);
    expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    expect(await res.json()).toMatchObject({
      type: "about:blank",
      title: "Bad Request",
      status: 400,
      code: "invalid_argument",
    });
  });

  it.each([
    [{ limit: -1 }],
    [{ limit: 101 }],
    [{ status: 7 as SessionStatus }],
    [{ cursor: "garbage" }],
  ])("is invalid_argument over RPC and Connect for %j", async (bad) => {
    const headers = await svc.auth(OWNER);
    await expect(
      svc.rpc.listSessions({ quizId: quiz.quizId, ...bad }, { headers }),
    ).rejects.toMatchObject({ code: 3 });
    const err = await svc.rpc
      .listSessions({ quizId: quiz.quizId, ...bad }, { headers })
      .catch((e) => e);
    expect(ConnectError.from(err).code).toBe(Code.InvalidArgument);
  });
});
