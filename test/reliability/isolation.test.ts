import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { encodeCursor } from "../../src/domain/cursor.js";
import type { PageJson, SessionJson } from "../../src/rest/schemas.js";
import { insertAnswer, insertQuiz, insertSessions, type QuizFixture } from "../support/fixtures.js";
import { listVia, startVia, TRANSPORTS } from "../support/reliability.js";
import { startTestService, type TestService } from "../support/service.js";

let svc: TestService;
let quiz: QuizFixture;
let emptyQuiz: QuizFixture;
/** Alice's sessions on `quiz`, newest first; the first is in progress. */
let aliceIds: string[];
let aliceActiveId: string;
/** Every next_cursor Alice got paging her history two at a time. */
const aliceCursors: string[] = [];

const ALICE = "alice";

beforeAll(async () => {
  svc = await startTestService();
  quiz = await insertQuiz(svc.db, { questions: 3 });
  emptyQuiz = await insertQuiz(svc.db, { questions: 3 });
  const now = svc.clock.now().getTime();
  const history = Array.from({ length: 6 }, (_, i) => ({
    id: `0190${String(i).padStart(4, "0")}-0000-7000-8000-00000000a11c`,
    userId: ALICE,
    quizId: quiz.quizId,
    startedAt: new Date(now - (i + 2) * 3_600_000),
    completedAt: new Date(now - (i + 1) * 3_600_000),
    correctAnswers: 2,
  }));
  await insertSessions(svc.db, history);
  const started = await svc.rest(ALICE, "POST", `/quizzes/${quiz.quizId}/sessions`);
  aliceActiveId = ((await started.json()) as SessionJson).id;
  await insertAnswer(svc.db, {
    sessionId: aliceActiveId,
    questionId: quiz.questionIds[0] ?? "",
    userAnswer: "A1",
    isCorrect: true,
    answeredAt: svc.clock.now(),
  });
  aliceIds = [aliceActiveId, ...history.map((h) => h.id)];
  let cursor: string | null = "";
  while (cursor !== null) {
    const res = await svc.rest(
      ALICE,
      "GET",
      `/quizzes/${quiz.quizId}/sessions?limit=2&cursor=${cursor}`,
    );
    const page = (await res.json()) as PageJson;
    cursor = page.next_cursor;
    if (cursor) aliceCursors.push(cursor);
  }
  expect(aliceCursors).toHaveLength(3);
});
afterAll(async () => {
  await svc?.close();
});

async function restList(user: string, quizId: string, query = "") {
  const res = await svc.rest(user, "GET", `/quizzes/${quizId}/sessions${query}`);
  return { status: res.status, body: await res.text() };
}

describe("isolation between users", () => {
  it("shows Bob an empty page on Alice's quiz, byte for byte what he sees on a quiz nobody used", async () => {
    for (const status of ["", "?status=active", "?status=completed"]) {
      const onAlices = await restList("bob", quiz.quizId, status);
      const onEmpty = await restList("bob", emptyQuiz.quizId, status);
      expect(onAlices).toEqual({
        status: 200,
        body: '{"sessions":[],"next_cursor":null,"has_more":false}',
      });
      expect(onAlices).toEqual(onEmpty);
    }
    for (const transport of TRANSPORTS) {
      expect(await listVia(svc, transport, "bob", quiz.quizId)).toMatchObject({
        code: "ok",
        ids: [],
      });
    }
  });

  it("gives Bob nothing of Alice's with any of her cursors, any status, on any transport", async () => {
    for (const cursor of aliceCursors) {
      for (const status of ["", "&status=active", "&status=completed"]) {
        const res = await restList("bob", quiz.quizId, `?cursor=${cursor}${status}`);
        expect(res).toEqual({
          status: 200,
          body: '{"sessions":[],"next_cursor":null,"has_more":false}',
        });
      }
      const headers = await svc.auth("bob");
      expect(
        (await svc.connect.listSessions({ quizId: quiz.quizId, cursor }, { headers })).sessions,
      ).toEqual([]);
      expect(
        (await svc.grpc.listSessions({ quizId: quiz.quizId, cursor }, headers)).sessions,
      ).toEqual([]);
    }
  });

  it("with Alice's cursor, pages Bob's own sessions only: a cursor names a position, not an owner", async () => {
    const carol = "carol";
    const carolStart = await startVia(svc, "rest", carol, quiz.quizId);
    for (const cursor of ["", ...aliceCursors]) {
      const res = await svc.rest(
        carol,
        "GET",
        `/quizzes/${quiz.quizId}/sessions?limit=100&cursor=${cursor}`,
      );
      const page = (await res.json()) as PageJson;
      for (const s of page.sessions) expect(aliceIds).not.toContain(s.id);
      expect(page.sessions.every((s) => s.id === carolStart.id)).toBe(true);
    }
    // A cursor forged from Alice's newest session's position: still only Carol's rows.
    const started = await svc.db
      .selectFrom("practice_sessions")
      .select("started_at")
      .where("id", "=", aliceActiveId)
      .executeTakeFirstOrThrow();
    const forged = encodeCursor({
      startedAt: new Date(started.started_at.getTime() + 1),
      id: aliceActiveId,
    });
    const page = (await (
      await svc.rest(carol, "GET", `/quizzes/${quiz.quizId}/sessions?cursor=${forged}`)
    ).json()) as PageJson;
    expect(page.sessions.map((s) => s.id)).toEqual([carolStart.id]);
  });

  it("never resumes Alice's session for Bob: his start creates his own, hers is untouched", async () => {
    for (const transport of TRANSPORTS) {
      const bob = `bob-${transport}`;
      const outcome = await startVia(svc, transport, bob, quiz.quizId);
      expect(outcome).toMatchObject({ code: "ok", created: true });
      expect(aliceIds).not.toContain(outcome.id);
    }
    const again = await svc.rest(ALICE, "POST", `/quizzes/${quiz.quizId}/sessions`);
    const body = (await again.json()) as SessionJson;
    expect(again.status).toBe(200);
    expect(body.id).toBe(aliceActiveId);
    expect(body.answers).toHaveLength(1);
  });

  it("treats Alice's session id as nothing Bob can use: not a quiz id, not a cursor", async () => {
    const asQuiz = await restList("bob", aliceActiveId);
    const missing = await restList("bob", "999999999");
    expect(asQuiz.status).toBe(404);
    expect(asQuiz).toEqual(missing);
    const asCursor = await restList("bob", quiz.quizId, `?cursor=${aliceActiveId}`);
    expect(asCursor.status).toBe(400);
  });

  it.each([
    ["a trailing space", `${ALICE} `],
    ["two trailing spaces", `${ALICE}  `],
    ["another case", "Alice"],
    ["a zero-width space", `${ALICE}\u200b`],
    // A tab or another control character is refused outright (control-subjects.test.ts).
    ["a no-break space", `${ALICE}\u00a0`],
    ["a decomposed accent", "cafe\u0301"],
  ])(
    "keeps a user whose id differs from another's only by %s apart from them",
    async (_name, lookalike) => {
      const original = lookalike === "cafe\u0301" ? "caf\u00e9" : ALICE;
      if (original !== ALICE) await startVia(svc, "rest", original, quiz.quizId);
      const list = await listVia(svc, "rest", lookalike, quiz.quizId);
      expect(list).toMatchObject({ code: "ok", ids: [] });
      const start = await startVia(svc, "rest", lookalike, quiz.quizId);
      expect(start).toMatchObject({ code: "ok", created: true });
      expect(aliceIds).not.toContain(start.id);
      // And the original still resumes their own session, not the look-alike's.
      const mine = await startVia(svc, "rest", original, quiz.quizId);
      expect(mine).toMatchObject({ code: "ok", created: false });
      expect(mine.id).not.toBe(start.id);
    },
  );
});
