import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import type { QuizListJson } from "../../src/rest/quiz-list.js";
import { insertQuiz, insertSessions, sessionIdFor } from "../support/fixtures.js";
import { fileService } from "../support/in-process.js";

const svc = await fileService();
const DAY = 86_400_000;

/**
 * Quizzes for this file: two live ones, a deleted one, one under a deleted
 * study guide, and a live one without questions; the file's own database
 * holds nothing else.
 */
const live = await insertQuiz(svc.db, { questions: 3 });
const deleted = await insertQuiz(svc.db, { quizDeleted: true });
const orphan = await insertQuiz(svc.db, { studyGuideDeleted: true });
const second = await insertQuiz(svc.db, { questions: 2 });
const empty = await insertQuiz(svc.db, { questions: 0 });
const now = svc.clock.now().getTime();
// "lena": one session in progress on `live`, an expired one on `second`, a completed one on `second`.
await insertSessions(svc.db, [
  {
    id: sessionIdFor(9001),
    userId: "lena",
    quizId: live.quizId,
    startedAt: new Date(now - DAY),
    totalQuestions: 3,
  },
  {
    id: sessionIdFor(9002),
    userId: "lena",
    quizId: second.quizId,
    startedAt: new Date(now - 8 * DAY),
    totalQuestions: 2,
  },
  {
    id: sessionIdFor(9003),
    userId: "lena",
    quizId: second.quizId,
    startedAt: new Date(now - 2 * DAY),
    completedAt: new Date(now - 2 * DAY + 60_000),
    totalQuestions: 2,
    correctAnswers: 1,
  },
  // Another user's session in progress counts for them only.
  {
    id: sessionIdFor(9004),
    userId: "omar",
    quizId: second.quizId,
    startedAt: new Date(now - DAY),
    totalQuestions: 2,
  },
]);

const expected = [
  {
    id: live.quizId,
    study_guide_id: live.studyGuideId,
    title: "Quiz",
    question_count: 3,
    in_progress_sessions: 1,
    due_count: 0,
  },
  {
    id: second.quizId,
    study_guide_id: second.studyGuideId,
    title: "Quiz",
    question_count: 2,
    in_progress_sessions: 0,
    due_count: 0,
  },
  {
    id: empty.quizId,
    study_guide_id: empty.studyGuideId,
    title: "Quiz",
    question_count: 0,
    in_progress_sessions: 0,
    due_count: 0,
  },
];

async function get(path: string, user: string | null = "lena") {
  const res = await svc.rest(user, "GET", path);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe("ListQuizzes: the quizzes a learner can practise", () => {
  it("over REST: live quizzes by id, their question counts and the caller's sessions in progress", async () => {
    expect(await get("/quizzes")).toEqual({
      status: 200,
      body: { quizzes: expected, next_cursor: null, has_more: false },
    });
    expect((await get("/api/quizzes")).body).toEqual((await get("/quizzes")).body);
    // Deleted quizzes and those under a deleted study guide are not listed.
    const ids = ((await get("/quizzes")).body as QuizListJson).quizzes.map((q) => q.id);
    expect(ids).not.toContain(deleted.quizId);
    expect(ids).not.toContain(orphan.quizId);
    // Another user sees their own counts.
    const omar = (await get("/quizzes", "omar")).body as QuizListJson;
    expect(omar.quizzes.map((q) => q.in_progress_sessions)).toEqual([0, 1, 0]);
  });

  it("pages with limit and next_cursor", async () => {
    const first = (await get("/quizzes?limit=2")).body as QuizListJson;
    expect(first).toEqual({
      quizzes: expected.slice(0, 2),
      next_cursor: second.quizId,
      has_more: true,
    });
    const rest = (await get(`/quizzes?limit=2&cursor=${first.next_cursor}`)).body;
    expect(rest).toEqual({ quizzes: expected.slice(2), next_cursor: null, has_more: false });
  });

  it("over Connect: the same list", async () => {
    const page = await svc.quizRpc.listQuizzes({}, { headers: await svc.auth("lena") });
    expect(page.hasMore).toBe(false);
    expect(page.nextCursor).toBe("");
    expect(
      page.quizzes.map((q) => [
        q.id,
        q.studyGuideId,
        q.title,
        q.questionCount,
        q.inProgressSessions,
        q.dueCount,
      ]),
    ).toEqual(expected.map((q) => Object.values(q)));
    const one = await svc.quizRpc.listQuizzes({ limit: 1 }, { headers: await svc.auth("lena") });
    expect(one.nextCursor).toBe(live.quizId);
  });

  it("refuses a bad limit or cursor with invalid_argument, and no token with unauthenticated", async () => {
    for (const query of [
      "limit=0",
      "limit=101",
      "limit=x",
      "cursor=abc",
      "cursor=-1",
      "limit=1&limit=2",
    ]) {
      const res = await get(`/quizzes?${query}`);
      expect(res.status, query).toBe(400);
      expect(res.body.code, query).toBe("invalid_argument");
    }
    expect((await get("/quizzes", null)).status).toBe(401);
    const err = await svc.quizRpc
      .listQuizzes({ cursor: "zz" }, { headers: await svc.auth("lena") })
      .catch((e: unknown) => ConnectError.from(e));
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.InvalidArgument);
  });
});
