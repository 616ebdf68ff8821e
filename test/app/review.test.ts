import { Code } from "@connectrpc/connect";
import fc from "fast-check";
import { type Card, createEmptyCard, fsrs, generatorParameters, Rating } from "ts-fsrs";
import { describe, expect, it } from "vitest";
import { NothingDue } from "../../src/app/errors.js";
import { Quizzes } from "../../src/app/quizzes.js";
import { MemoryMoved, saveMemory } from "../../src/db/question-memory-repository.js";
import { MAX_REVIEW_QUESTIONS, rememberAnswer } from "../../src/domain/memory.js";
import { STALE_AFTER_MS } from "../../src/domain/session.js";
import { insertQuestion, insertQuiz, snapshotOf } from "../support/fixtures.js";
import { newUser, rejection, useCaseWorld } from "../support/use-cases.js";

// Spaced repetition on the use cases themselves, with the fake clock, on
// SQLite and on MySQL/MariaDB (the suite runs once per store).
const w = useCaseWorld();

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;
/** What any client computes: ts-fsrs 5, default parameters, fuzz off. */
const reference = fsrs(generatorParameters({ enable_fuzz: false }));

/** The correct answer of the fixture's question at `position` (test/support/fixtures.ts). */
const right = (position: number) => `A${position}`;

/** Answers one question in a new full session and completes it. */
async function practise(user: string, quizId: string, questionId: string, answer: string) {
  const { session } = await w.sessions.startSession(user, quizId);
  await w.sessions.submitAnswer(user, { sessionId: session.id, questionId, userAnswer: answer });
  await w.sessions.completeSession(user, session.id);
  return session.id;
}

async function memoryRows(user: string) {
  return w.db
    .selectFrom("practice_question_memory")
    .selectAll()
    .where("user_id", "=", user)
    .orderBy("question_id")
    .execute();
}

describe("a learner's memory of each question (FSRS)", () => {
  it("gives the due dates ts-fsrs gives for the same history of right and wrong answers", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            correct: fc.boolean(),
            // From a few seconds to a few months between two answers.
            wait: fc.oneof(
              fc.integer({ min: 1000, max: 20 * MINUTE }),
              fc.integer({ min: 1, max: 90 * DAY }),
            ),
          }),
          { minLength: 1, maxLength: 6 },
        ),
        async (history) => {
          const user = newUser();
          const quiz = await insertQuiz(w.db, { questions: 1 });
          const [questionId] = quiz.questionIds as [string];
          let card: Card = createEmptyCard(w.clock.now());
          for (const { correct, wait } of history) {
            w.clock.advance(wait);
            await practise(user, quiz.quizId, questionId, correct ? right(1) : "wrong");
            card = reference.next(card, w.clock.now(), correct ? Rating.Good : Rating.Again).card;
          }
          const [row] = await memoryRows(user);
          expect(row?.due_at).toEqual(card.due);
          expect(row?.last_answered_at).toEqual(card.last_review);
          expect([row?.reps, row?.lapses, row?.state]).toEqual([
            card.reps,
            card.lapses,
            card.state,
          ]);
          expect([row?.stability, row?.difficulty]).toEqual([card.stability, card.difficulty]);

          const due = await w.sessions.listDueQuestions(user, quiz.quizId);
          const isDue = card.due.getTime() <= w.clock.now().getTime();
          expect(due.questions.map((q) => q.dueAt)).toEqual(isDue ? [card.due] : []);
          expect(due.nextDueAt).toEqual(isDue ? null : card.due);
          expect(due.newCount).toBe(0);
        },
      ),
      { numRuns: 15 },
    );
  });

  it("makes a wrongly answered question due sooner than a rightly answered one", async () => {
    const user = newUser();
    const quiz = await insertQuiz(w.db, { questions: 2 });
    const [q1, q2] = quiz.questionIds as [string, string];
    const { session } = await w.sessions.startSession(user, quiz.quizId);
    await w.sessions.submitAnswer(user, {
      sessionId: session.id,
      questionId: q1,
      userAnswer: right(1),
    });
    await w.sessions.submitAnswer(user, {
      sessionId: session.id,
      questionId: q2,
      userAnswer: "no",
    });
    const [m1, m2] = await memoryRows(user);
    expect(m2?.due_at.getTime()).toBeLessThan(m1?.due_at.getTime() ?? 0);
    expect([m1?.last_correct, m2?.last_correct].map(Number)).toEqual([1, 0]);

    // Wrong: due a minute later (Again); right: ten minutes (Good).
    w.clock.advance(MINUTE);
    const due = await w.sessions.listDueQuestions(user, quiz.quizId);
    expect(due.questions.map((q) => [q.questionId, q.position, q.lastCorrect])).toEqual([
      [q2, 2, false],
    ]);
    expect(due.nextDueAt).toEqual(m1?.due_at);
  });

  it("is not moved by a replayed answer, a refused one, or an answer to a completed session", async () => {
    const user = newUser();
    const quiz = await insertQuiz(w.db, { questions: 2 });
    const [q1, q2] = quiz.questionIds as [string, string];
    const { session } = await w.sessions.startSession(user, quiz.quizId);
    const answer = { sessionId: session.id, questionId: q1, userAnswer: "no" };
    await w.sessions.submitAnswer(user, answer);
    const before = await memoryRows(user);

    w.clock.advance(5 * MINUTE);
    const replay = await w.sessions.submitAnswer(user, answer);
    expect(replay.created).toBe(false);
    await rejection(
      w.sessions.submitAnswer(user, { ...answer, userAnswer: right(1) }),
      Code.AlreadyExists,
    );
    await w.sessions.completeSession(user, session.id);
    // Completion records the unanswered q2 as missed, and leaves q1 as it was.
    const completed = await memoryRows(user);
    expect(completed[0]).toEqual(before[0]);
    expect(completed.map((m) => [String(m.question_id), Number(m.last_correct)])).toEqual([
      [q1, 0],
      [q2, 0],
    ]);
    await rejection(
      w.sessions.submitAnswer(user, {
        sessionId: session.id,
        questionId: q2,
        userAnswer: right(2),
      }),
      Code.FailedPrecondition,
    );
    // An expired session refuses its answers too.
    const { session: late } = await w.sessions.startSession(user, quiz.quizId);
    w.clock.advance(STALE_AFTER_MS + MINUTE);
    await rejection(
      w.sessions.submitAnswer(user, { sessionId: late.id, questionId: q2, userAnswer: right(2) }),
      Code.FailedPrecondition,
    );
    expect(await memoryRows(user)).toEqual(completed);
  });

  it("is never overwritten from a stale read: the write is refused and the answer runs again", async () => {
    const user = newUser();
    const quiz = await insertQuiz(w.db, { questions: 1 });
    const [questionId] = quiz.questionIds as [string];
    await practise(user, quiz.quizId, questionId, "no");
    const before = await memoryRows(user);
    const stale = rememberAnswer(undefined, true, w.clock.now());
    const key = { userId: user, quizId: quiz.quizId, questionId };
    await expect(
      w.db.transaction().execute((trx) => saveMemory(trx, key, { ...stale, reps: 7 }, stale)),
    ).rejects.toBeInstanceOf(MemoryMoved);
    expect(await memoryRows(user)).toEqual(before);
  });

  it("is the caller's own: another learner sees none of it", async () => {
    const [ana, ben] = [newUser(), newUser()];
    const quiz = await insertQuiz(w.db, { questions: 2 });
    await practise(ana, quiz.quizId, quiz.questionIds[0] as string, "no");
    w.clock.advance(2 * MINUTE);
    // The wrong answer and the question left unanswered.
    expect((await w.sessions.listDueQuestions(ana, quiz.quizId)).questions).toHaveLength(2);
    expect(await w.sessions.listDueQuestions(ben, quiz.quizId)).toEqual({
      questions: [],
      dueCount: 0,
      newCount: 2,
      nextDueAt: null,
      next: undefined,
      nextCursor: undefined,
    });
  });

  it("is not_found for a quiz that is missing, deleted or not a quiz id, as the list is", async () => {
    const deleted = await insertQuiz(w.db, { quizDeleted: true });
    const underDeletedGuide = await insertQuiz(w.db, { studyGuideDeleted: true });
    for (const quizId of [deleted.quizId, underDeletedGuide.quizId, "999999", "abc", "0"]) {
      await rejection(w.sessions.listDueQuestions(newUser(), quizId), Code.NotFound);
    }
  });
});

describe("a review session", () => {
  it("snapshots the questions due now, earliest due first, then by position", async () => {
    const user = newUser();
    const quiz = await insertQuiz(w.db, { questions: 4 });
    const [q1, q2, q3, q4] = quiz.questionIds as [string, string, string, string];
    const { session } = await w.sessions.startSession(user, quiz.quizId);
    const answer = (questionId: string, userAnswer: string) =>
      w.sessions.submitAnswer(user, { sessionId: session.id, questionId, userAnswer });
    await answer(q3, "no");
    await answer(q4, right(4));
    w.clock.advance(1000);
    await answer(q2, "no");
    await answer(q1, "no");
    await w.sessions.completeSession(user, session.id);
    w.clock.advance(2 * MINUTE);

    const review = await w.sessions.startSession(user, quiz.quizId, "review");
    expect(review.created).toBe(true);
    expect(review.session).toMatchObject({
      mode: "review",
      totalQuestions: 3,
      answeredQuestions: 0,
    });
    expect(review.questions.map((q) => [q.position, q.questionId])).toEqual([
      [1, q3],
      [2, q1],
      [3, q2],
    ]);
    expect(await snapshotOf(w.db, review.session.id)).toEqual([
      { position: 1, question_id: q3 },
      { position: 2, question_id: q1 },
      { position: 3, question_id: q2 },
    ]);
    // practice.session.started says which mode.
    const started = await w.db
      .selectFrom("practice_outbox")
      .select("body")
      .where("session_id", "=", review.session.id)
      .where("type", "=", "practice.session.started")
      .executeTakeFirstOrThrow();
    expect(JSON.parse(started.body).data).toMatchObject({ mode: "review", total_questions: 3 });
    // The score formula is the spec's, over the snapshot.
    await w.sessions.submitAnswer(user, {
      sessionId: review.session.id,
      questionId: q3,
      userAnswer: right(3),
    });
    const done = await w.sessions.completeSession(user, review.session.id);
    expect([done.mode, done.correctAnswers, done.scorePercentage]).toEqual(["review", 1, 33]);
    const page = await w.sessions.listSessions(user, { quizId: quiz.quizId });
    expect(page.sessions.map((s) => s.mode)).toEqual(["review", "full"]);
    // Its answers move the memory as any other: q3 is no longer due; q1 and
    // q2, left unanswered, are missed again at completion (Again: a minute).
    expect((await w.sessions.listDueQuestions(user, quiz.quizId)).questions).toEqual([]);
    w.clock.advance(2 * MINUTE);
    const due = await w.sessions.listDueQuestions(user, quiz.quizId);
    expect(due.questions.map((q) => q.questionId)).toEqual([q1, q2]);
  });

  it(`holds at most ${MAX_REVIEW_QUESTIONS} questions, the earliest due`, async () => {
    const user = newUser();
    const quiz = await insertQuiz(w.db, { questions: MAX_REVIEW_QUESTIONS + 5 });
    const { session } = await w.sessions.startSession(user, quiz.quizId);
    // Answered last first, a second apart: the last question is due first.
    for (const questionId of [...quiz.questionIds].reverse()) {
      await w.sessions.submitAnswer(user, { sessionId: session.id, questionId, userAnswer: "no" });
      w.clock.advance(1000);
    }
    await w.sessions.completeSession(user, session.id);
    w.clock.advance(2 * MINUTE);
    const all = await w.sessions.listDueQuestions(user, quiz.quizId, { limit: 100 });
    expect([all.questions.length, all.dueCount]).toEqual([25, 25]);
    const review = await w.sessions.startSession(user, quiz.quizId, "review");
    expect(review.questions.map((q) => q.questionId)).toEqual(
      [...quiz.questionIds].reverse().slice(0, MAX_REVIEW_QUESTIONS),
    );
    expect(review.session.totalQuestions).toBe(MAX_REVIEW_QUESTIONS);
  });

  it("is refused with the next due time when nothing is due, and writes nothing", async () => {
    const user = newUser();
    const quiz = await insertQuiz(w.db, { questions: 2 });
    const never = await rejection(
      w.sessions.startSession(user, quiz.quizId, "review"),
      Code.FailedPrecondition,
    );
    expect(never).toBeInstanceOf(NothingDue);
    expect((never as NothingDue).nextDueAt).toBeNull();

    await practise(user, quiz.quizId, quiz.questionIds[0] as string, right(1));
    // q1 right (Good: ten minutes), q2 left unanswered (Again: a minute).
    const memory = await memoryRows(user);
    const err = await rejection(
      w.sessions.startSession(user, quiz.quizId, "review"),
      Code.FailedPrecondition,
    );
    expect((err as NothingDue).nextDueAt).toEqual(memory[1]?.due_at);
    expect(memory[1]?.due_at.getTime()).toBeLessThan(memory[0]?.due_at.getTime() ?? 0);
    const page = await w.sessions.listSessions(user, { quizId: quiz.quizId });
    expect(page.sessions.map((s) => s.mode)).toEqual(["full"]);
  });

  it("resumes the session in progress, of either mode, instead of starting one", async () => {
    const user = newUser();
    const quiz = await insertQuiz(w.db, { questions: 2 });
    // Nothing is due, but a full session is in progress: resumed.
    const full = await w.sessions.startSession(user, quiz.quizId);
    const resumed = await w.sessions.startSession(user, quiz.quizId, "review");
    expect([resumed.created, resumed.session.id, resumed.session.mode]).toEqual([
      false,
      full.session.id,
      "full",
    ]);
    await w.sessions.submitAnswer(user, {
      sessionId: full.session.id,
      questionId: quiz.questionIds[0] as string,
      userAnswer: "no",
    });
    await w.sessions.completeSession(user, full.session.id);
    w.clock.advance(2 * MINUTE);
    const review = await w.sessions.startSession(user, quiz.quizId, "review");
    const again = await w.sessions.startSession(user, quiz.quizId);
    expect([again.created, again.session.id, again.session.mode]).toEqual([
      false,
      review.session.id,
      "review",
    ]);
  });

  it("replaces a stale session of either mode, as a full start does", async () => {
    const user = newUser();
    const quiz = await insertQuiz(w.db, { questions: 2 });
    await practise(user, quiz.quizId, quiz.questionIds[0] as string, "no");
    w.clock.advance(2 * MINUTE);
    const stale = await w.sessions.startSession(user, quiz.quizId, "review");
    w.clock.advance(STALE_AFTER_MS + MINUTE);
    const fresh = await w.sessions.startSession(user, quiz.quizId, "review");
    expect(fresh.created).toBe(true);
    expect(fresh.session.id).not.toBe(stale.session.id);
    // The wrong answer and the question left unanswered.
    expect(fresh.questions.map((q) => q.questionId)).toEqual(quiz.questionIds);
  });

  it("when a review start and a full start race, one creates and the other resumes it", async () => {
    for (let round = 0; round < 5; round++) {
      const user = newUser();
      const quiz = await insertQuiz(w.db, { questions: 3 });
      await practise(user, quiz.quizId, quiz.questionIds[1] as string, "no");
      w.clock.advance(2 * MINUTE);
      const results = await Promise.all([
        w.sessions.startSession(user, quiz.quizId, "review"),
        w.sessions.startSession(user, quiz.quizId),
        w.sessions.startSession(user, quiz.quizId, "review"),
        w.sessions.startSession(user, quiz.quizId),
      ]);
      expect(results.filter((r) => r.created)).toHaveLength(1);
      expect(new Set(results.map((r) => r.session.id)).size).toBe(1);
      const active = await w.sessions.listSessions(user, { quizId: quiz.quizId, status: "active" });
      expect(active.sessions).toHaveLength(1);
    }
  });

  it("leaves out a hard-deleted question: from what is due and new snapshots, not old ones", async () => {
    const user = newUser();
    const quiz = await insertQuiz(w.db, { questions: 2 });
    const [q1, q2] = quiz.questionIds as [string, string];
    const { session } = await w.sessions.startSession(user, quiz.quizId);
    for (const questionId of [q1, q2]) {
      await w.sessions.submitAnswer(user, { sessionId: session.id, questionId, userAnswer: "no" });
    }
    await w.sessions.completeSession(user, session.id);
    w.clock.advance(2 * MINUTE);
    const old = await w.sessions.startSession(user, quiz.quizId, "review");
    await w.sessions.completeSession(user, old.session.id);
    w.clock.advance(2 * MINUTE);

    await w.db.deleteFrom("questions").where("id", "=", q1).execute();
    expect((await memoryRows(user)).map((m) => String(m.question_id))).toEqual([q2]);
    const due = await w.sessions.listDueQuestions(user, quiz.quizId);
    expect(due.questions.map((q) => [q.questionId, q.position])).toEqual([[q2, 1]]);
    const list = await new Quizzes(w.db, undefined, w.clock).listQuizzes(user, {});
    expect(list.quizzes.find((q) => q.id === quiz.quizId)?.dueCount).toBe(1);
    const fresh = await w.sessions.startSession(user, quiz.quizId, "review");
    expect(fresh.questions.map((q) => q.questionId)).toEqual([q2]);
    // The old review keeps its entry, without the question (the spec's rule).
    const kept = await w.sessions.getSession(user, old.session.id);
    expect(kept.questions.map((q) => q.questionId)).toEqual([null, q2]);
  });

  it("counts a question added since as new, never as due", async () => {
    const user = newUser();
    const quiz = await insertQuiz(w.db, { questions: 1 });
    await practise(user, quiz.quizId, quiz.questionIds[0] as string, "no");
    await insertQuestion(w.db, quiz.quizId, 2);
    w.clock.advance(2 * MINUTE);
    const due = await w.sessions.listDueQuestions(user, quiz.quizId);
    expect([due.questions.length, due.newCount]).toEqual([1, 1]);
  });
});
