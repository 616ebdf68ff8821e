import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { Quizzes } from "../../src/app/quizzes.js";
import { STALE_AFTER_MS } from "../../src/domain/session.js";
import { countRows, insertQuestion, insertQuiz } from "../support/fixtures.js";
import { newUser, rejection, useCaseWorld } from "../support/use-cases.js";

// Progress, expiry, review and quiz content, on the use cases themselves with the fake clock.
const w = useCaseWorld();

async function started(questions = 3) {
  const user = newUser();
  const quiz = await insertQuiz(w.db, { questions });
  const { session } = await w.sessions.startSession(user, quiz.quizId);
  return { user, quiz, session, q: quiz.questionIds };
}

const answerRows = () => countRows(w.db, "practice_session_answers");

describe("answered questions", () => {
  it("counts every answer, right or wrong, in the result and in the stored session", async () => {
    const { user, session, q } = await started();
    const counts = [];
    for (const [i, text] of ["A1", "wrong"].entries()) {
      const input = { sessionId: session.id, questionId: q[i] ?? "", userAnswer: text };
      const res = await w.sessions.submitAnswer(user, input);
      counts.push([res.session.answeredQuestions, res.session.correctAnswers]);
    }
    expect(counts).toEqual([
      [1, 1],
      [2, 1],
    ]);
    const { session: detail } = await w.sessions.getSession(user, session.id);
    expect(detail).toMatchObject({ answeredQuestions: 2, correctAnswers: 1 });
    const page = await w.sessions.listSessions(user, { quizId: session.quizId });
    expect(page.sessions[0]).toMatchObject({ answeredQuestions: 2 });
  });
});

describe("an expired session refuses writes", () => {
  it("takes answers and completion exactly 7 days after the start", async () => {
    const { user, session, q } = await started();
    w.clock.advance(STALE_AFTER_MS);
    const input = { sessionId: session.id, questionId: q[0] ?? "", userAnswer: "A1" };
    expect((await w.sessions.submitAnswer(user, input)).answer.isCorrect).toBe(true);
    expect((await w.sessions.completeSession(user, session.id)).completedAt).toEqual(w.clock.now());
  });

  it("a millisecond later refuses both with failed_precondition and writes nothing", async () => {
    const { user, session, q } = await started();
    w.clock.advance(STALE_AFTER_MS + 1);
    const before = await answerRows();
    const input = { sessionId: session.id, questionId: q[0] ?? "", userAnswer: "A1" };
    const err = await rejection(w.sessions.submitAnswer(user, input), Code.FailedPrecondition);
    expect(err.rawMessage).toMatch(/expired/);
    await rejection(w.sessions.completeSession(user, session.id), Code.FailedPrecondition);
    expect(await answerRows()).toBe(before);
    const { session: detail } = await w.sessions.getSession(user, session.id);
    expect(detail).toMatchObject({ completedAt: null, answeredQuestions: 0 });
  });
});

describe("review", () => {
  it("gives no correct answer while in progress; once completed, each question's current one (null if deleted)", async () => {
    const { user, session, q } = await started();
    const during = await w.sessions.getSession(user, session.id);
    expect(during.questions.map((x) => x.correctAnswer)).toEqual([null, null, null]);
    await w.sessions.completeSession(user, session.id);
    await w.db
      .updateTable("questions")
      .set({ correct_answer: "new" })
      .where("id", "=", q[1] ?? "")
      .execute();
    await w.db
      .deleteFrom("questions")
      .where("id", "=", q[2] ?? "")
      .execute();
    const after = await w.sessions.getSession(user, session.id);
    expect(after.questions).toEqual([
      { position: 1, questionId: q[0], correctAnswer: "A1" },
      { position: 2, questionId: q[1], correctAnswer: "new" },
      { position: 3, questionId: null, correctAnswer: null },
    ]);
  });
});

describe("getQuiz", () => {
  it("gives the live quiz's questions numbered in (position, id) order, as a snapshot would", async () => {
    const quiz = await insertQuiz(w.db, { questions: 2 });
    const extra = await insertQuestion(w.db, quiz.quizId, 1); // same position as the first: after it by id
    const content = await new Quizzes(w.db).getQuiz(quiz.quizId);
    expect(content).toEqual({
      id: quiz.quizId,
      studyGuideId: quiz.studyGuideId,
      title: "Quiz",
      questions: [
        { id: quiz.questionIds[0], position: 1, prompt: "Q1?" },
        { id: extra, position: 2, prompt: "Q1?" },
        { id: quiz.questionIds[1], position: 3, prompt: "Q2?" },
      ],
    });
    const { questions } = await w.sessions.startSession(newUser(), quiz.quizId);
    expect(questions.map((x) => x.questionId)).toEqual(content.questions.map((x) => x.id));
  });

  it("is not_found, like the list, for a missing, soft-deleted or guide-deleted quiz and non-ids", async () => {
    const deleted = await insertQuiz(w.db, { quizDeleted: true });
    const guideDeleted = await insertQuiz(w.db, { studyGuideDeleted: true });
    const quizzes = new Quizzes(w.db);
    for (const quizId of ["424242", deleted.quizId, guideDeleted.quizId, "abc", "0"]) {
      const err = await rejection(quizzes.getQuiz(quizId), Code.NotFound);
      expect(err.rawMessage).toBe("quiz not found");
    }
    expect(
      (await quizzes.getQuiz((await insertQuiz(w.db, { questions: 0 })).quizId)).questions,
    ).toEqual([]);
  });
});
