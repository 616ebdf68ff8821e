import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { STALE_AFTER_MS } from "../../src/domain/session.js";
import {
  countRows,
  insertAnswer,
  insertQuestion,
  insertQuiz,
  insertSessions,
} from "../support/fixtures.js";
import { newUser, rejection, useCaseWorld } from "../support/use-cases.js";

// The spec's start rules, on the use case itself (no transport), with the fake clock.
const w = useCaseWorld();

async function snapshotOf(sessionId: string) {
  return w.db
    .selectFrom("practice_session_questions")
    .select(["position", "question_id"])
    .where("session_id", "=", sessionId)
    .orderBy("position")
    .execute();
}

describe("startSession", () => {
  it("creates an in-progress session that freezes the quiz's questions, with no answers", async () => {
    const quiz = await insertQuiz(w.db, { questions: 3 });
    const { session, created, questions } = await w.sessions.startSession(newUser(), quiz.quizId);
    expect(created).toBe(true);
    expect(session).toEqual({
      id: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-/),
      quizId: quiz.quizId,
      startedAt: w.clock.now(),
      completedAt: null,
      totalQuestions: 3,
      correctAnswers: 0,
      answeredQuestions: 0,
      scorePercentage: null,
      expiresAt: new Date(w.clock.now().getTime() + STALE_AFTER_MS),
      mode: "full",
      answers: [],
    });
    expect(await snapshotOf(session.id)).toEqual(
      quiz.questionIds.map((id, i) => ({ position: i + 1, question_id: id })),
    );
    // The snapshot comes back with the start, never with a correct answer.
    expect(questions).toEqual(
      quiz.questionIds.map((id, i) => ({ position: i + 1, questionId: id, correctAnswer: null })),
    );
  });

  it("resumes the user's in-progress session: same id, answers oldest first, no new snapshot", async () => {
    const user = newUser();
    const quiz = await insertQuiz(w.db, { questions: 3 });
    const first = await w.sessions.startSession(user, quiz.quizId);
    const [q1, q2] = quiz.questionIds as [string, string];
    const t = w.clock.now().getTime();
    await insertAnswer(w.db, {
      sessionId: first.session.id,
      questionId: q2,
      userAnswer: "late",
      isCorrect: false,
      answeredAt: new Date(t + 2000),
    });
    await insertAnswer(w.db, {
      sessionId: first.session.id,
      questionId: q1,
      userAnswer: "early",
      isCorrect: true,
      answeredAt: new Date(t + 1000),
    });
    await insertQuestion(w.db, quiz.quizId, 4);
    w.clock.advance(60_000);

    const again = await w.sessions.startSession(user, quiz.quizId);
    expect(again.created).toBe(false);
    expect(again.session.id).toBe(first.session.id);
    expect(again.session.totalQuestions).toBe(3);
    expect(again.session.answers.map((a) => a.userAnswer)).toEqual(["early", "late"]);
    expect(again.questions.map((q) => q.questionId)).toEqual(quiz.questionIds);
    expect(await snapshotOf(first.session.id)).toHaveLength(3);
  });

  it("keeps a hard-deleted question's snapshot entry and answers, with question id null", async () => {
    const user = newUser();
    const quiz = await insertQuiz(w.db, { questions: 2 });
    const { session } = await w.sessions.startSession(user, quiz.quizId);
    const [q1, q2] = quiz.questionIds as [string, string];
    await w.sessions.submitAnswer(user, {
      sessionId: session.id,
      questionId: q1,
      userAnswer: "A1",
    });
    await w.db.deleteFrom("questions").where("id", "=", q1).execute();

    const resumed = await w.sessions.startSession(user, quiz.quizId);
    expect(resumed.session.totalQuestions).toBe(2);
    expect(resumed.session.answers).toMatchObject([
      { questionId: null, userAnswer: "A1", isCorrect: true },
    ]);
    expect(await snapshotOf(session.id)).toEqual([
      { position: 1, question_id: null },
      { position: 2, question_id: q2 },
    ]);
  });

  it("replaces a session in progress for more than 7 days, but not one exactly 7 days old", async () => {
    const user = newUser();
    const quiz = await insertQuiz(w.db, { questions: 2 });
    const { session } = await w.sessions.startSession(user, quiz.quizId);

    w.clock.advance(STALE_AFTER_MS);
    const atSevenDays = await w.sessions.startSession(user, quiz.quizId);
    expect(atSevenDays).toMatchObject({ created: false, session: { id: session.id } });

    w.clock.advance(1);
    const fresh = await w.sessions.startSession(user, quiz.quizId);
    expect(fresh.created).toBe(true);
    expect(fresh.session.id).not.toBe(session.id);
    expect(fresh.session.startedAt).toEqual(w.clock.now());
    const old = await w.db
      .selectFrom("practice_sessions")
      .select("id")
      .where("id", "=", session.id)
      .execute();
    expect(old).toEqual([]);
    expect(await snapshotOf(session.id)).toEqual([]);
  });

  it("never deletes a completed session, however old", async () => {
    const user = newUser();
    const quiz = await insertQuiz(w.db, { questions: 1 });
    const old = new Date(w.clock.now().getTime() - 30 * 86_400_000);
    const id = "01900000-0000-7000-8000-00000000c0de";
    await insertSessions(w.db, [
      { id, userId: user, quizId: quiz.quizId, startedAt: old, completedAt: old },
    ]);
    const started = await w.sessions.startSession(user, quiz.quizId);
    expect(started.created).toBe(true);
    const kept = await w.db.selectFrom("practice_sessions").select("id").where("id", "=", id);
    expect(await kept.execute()).toEqual([{ id }]);
  });

  it("frees the (user, quiz) slot on completion: the next start creates a new session", async () => {
    const user = newUser();
    const quiz = await insertQuiz(w.db, { questions: 1 });
    const first = await w.sessions.startSession(user, quiz.quizId);
    await w.sessions.completeSession(user, first.session.id);
    const next = await w.sessions.startSession(user, quiz.quizId);
    expect(next.created).toBe(true);
    expect(next.session.id).not.toBe(first.session.id);
  });

  it("gives each user their own session on the same quiz", async () => {
    const quiz = await insertQuiz(w.db, { questions: 1 });
    const a = await w.sessions.startSession(newUser(), quiz.quizId);
    const b = await w.sessions.startSession(newUser(), quiz.quizId);
    expect(a.created && b.created).toBe(true);
    expect(a.session.id).not.toBe(b.session.id);
  });

  it("is not_found for a missing, soft-deleted or guide-deleted quiz and for ids that name no quiz", async () => {
    const deleted = await insertQuiz(w.db, { quizDeleted: true });
    const guideDeleted = await insertQuiz(w.db, { studyGuideDeleted: true });
    const messages = new Set<string>();
    for (const quizId of [deleted.quizId, guideDeleted.quizId, "999999", "0", "abc", "-1", "1e3"]) {
      const err = await rejection(w.sessions.startSession(newUser(), quizId), Code.NotFound);
      messages.add(err.rawMessage);
    }
    expect([...messages]).toEqual(["quiz not found"]);
  });

  it("is failed_precondition on a live quiz with no questions, and writes nothing", async () => {
    const quiz = await insertQuiz(w.db, { questions: 0 });
    const before = await countRows(w.db, "practice_sessions");
    await rejection(w.sessions.startSession(newUser(), quiz.quizId), Code.FailedPrecondition);
    expect(await countRows(w.db, "practice_sessions")).toBe(before);
  });

  it("when starts race, one creates and the others resume the winner's session", async () => {
    const user = newUser();
    const quiz = await insertQuiz(w.db, { questions: 2 });
    const results = await Promise.all(
      Array.from({ length: 8 }, () => w.sessions.startSession(user, quiz.quizId)),
    );
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect(new Set(results.map((r) => r.session.id)).size).toBe(1);
  });
});
