import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { insertQuiz, snapshotOf } from "../support/fixtures.js";
import { newUser, rejection, useCaseWorld } from "../support/use-cases.js";

// "Practise what you missed": a session of the questions not answered
// correctly in the learner's latest completed session, on the use cases
// with the fake clock, on SQLite and on MySQL/MariaDB (one run per store).
const w = useCaseWorld();

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;
const right = (position: number) => `A${position}`;

/**
 * A learner completes a full session of a 5-question quiz: q1 right, q2
 * wrong, q3 skipped, q4 wrong, q5 right (answered in that order, a second apart).
 */
async function finishedRound() {
  const user = newUser();
  const quiz = await insertQuiz(w.db, { questions: 5 });
  const q = quiz.questionIds as [string, string, string, string, string];
  const { session } = await w.sessions.startSession(user, quiz.quizId);
  const answers: [string, string][] = [
    [q[0], right(1)],
    [q[1], "no"],
    [q[3], "nope"],
    [q[4], right(5)],
  ];
  for (const [questionId, userAnswer] of answers) {
    await w.sessions.submitAnswer(user, { sessionId: session.id, questionId, userAnswer });
    w.clock.advance(1000);
  }
  const done = await w.sessions.completeSession(user, session.id);
  return { user, quiz, q, full: done };
}

async function memoryOf(user: string, questionId: string) {
  return w.db
    .selectFrom("practice_question_memory")
    .selectAll()
    .where("user_id", "=", user)
    .where("question_id", "=", questionId)
    .executeTakeFirst();
}

/** The data of a session's outbox event of `type`. */
async function eventData(sessionId: string, type: string): Promise<unknown> {
  const row = await w.db
    .selectFrom("practice_outbox")
    .select("body")
    .where("session_id", "=", sessionId)
    .where("type", "=", type)
    .executeTakeFirstOrThrow();
  return JSON.parse(row.body).data;
}

describe("a missed session", () => {
  it("holds, at once, exactly the wrong and the unanswered questions of the latest completed session, in quiz order", async () => {
    const { user, quiz, q, full } = await finishedRound();
    expect(full.scorePercentage).toBe(40);

    const missed = await w.sessions.startSession(user, quiz.quizId, "missed");
    expect(missed.created).toBe(true);
    expect(missed.session).toMatchObject({
      mode: "missed",
      totalQuestions: 3,
      answeredQuestions: 0,
      completedAt: null,
    });
    expect(missed.questions.map((x) => [x.position, x.questionId])).toEqual([
      [1, q[1]],
      [2, q[2]],
      [3, q[3]],
    ]);
    expect(await snapshotOf(w.db, missed.session.id)).toEqual([
      { position: 1, question_id: q[1] },
      { position: 2, question_id: q[2] },
      { position: 3, question_id: q[3] },
    ]);
    expect(await eventData(missed.session.id, "practice.session.started")).toMatchObject({
      mode: "missed",
      total_questions: 3,
    });
    const page = await w.sessions.listSessions(user, { quizId: quiz.quizId });
    expect(page.sessions.map((s) => s.mode)).toEqual(["missed", "full"]);
    // Its completion says which round it was: a consumer keeps it apart from whole-quiz rounds.
    await w.sessions.completeSession(user, missed.session.id);
    expect(await eventData(missed.session.id, "practice.session.completed")).toMatchObject({
      mode: "missed",
      total_questions: 3,
    });
  });

  it("records the question left unanswered as missed at completion, so it is due in spaced review two days later", async () => {
    const { user, quiz, q, full } = await finishedRound();
    // Again at completed_at, with no answer row: ts-fsrs's Again from new is a minute.
    const skipped = await memoryOf(user, q[2]);
    expect(skipped).toMatchObject({ reps: 1, lapses: 0 });
    expect(Number(skipped?.last_correct)).toBe(0);
    expect(skipped?.last_answered_at).toEqual(full.completedAt);
    expect(skipped?.due_at.getTime()).toBe((full.completedAt?.getTime() ?? 0) + MINUTE);
    const answers = await w.db
      .selectFrom("practice_session_answers")
      .select("question_id")
      .where("session_id", "=", full.id)
      .execute();
    expect(answers.map((a) => String(a.question_id))).not.toContain(q[2]);

    await w.sessions.startSession(user, quiz.quizId, "missed");
    w.clock.advance(2 * DAY);
    const due = await w.sessions.listDueQuestions(user, quiz.quizId);
    expect(due.questions.map((x) => x.questionId)).toContain(q[2]);
    expect(due.questions.find((x) => x.questionId === q[2])?.lastCorrect).toBe(false);
    expect(due.newCount).toBe(0);
  });

  it("is scored by the spec's formula, and its answers move the memory as any answer does", async () => {
    const { user, quiz, q } = await finishedRound();
    const { session } = await w.sessions.startSession(user, quiz.quizId, "missed");
    const before = await memoryOf(user, q[1]);
    w.clock.advance(MINUTE);
    await w.sessions.submitAnswer(user, {
      sessionId: session.id,
      questionId: q[1],
      userAnswer: right(2),
    });
    const after = await memoryOf(user, q[1]);
    expect(after?.reps).toBe((before?.reps ?? 0) + 1);
    expect(Number(after?.last_correct)).toBe(1);
    // A question outside the snapshot is not part of this session.
    await rejection(
      w.sessions.submitAnswer(user, {
        sessionId: session.id,
        questionId: q[0],
        userAnswer: right(1),
      }),
      Code.InvalidArgument,
    );
    const done = await w.sessions.completeSession(user, session.id);
    expect([done.mode, done.correctAnswers, done.totalQuestions, done.scorePercentage]).toEqual([
      "missed",
      1,
      3,
      33,
    ]);

    // The next missed session retries what this one missed: q3 and q4, still unanswered.
    const again = await w.sessions.startSession(user, quiz.quizId, "missed");
    expect(again.questions.map((x) => x.questionId)).toEqual([q[2], q[3]]);
  });

  it("follows the one-active rule: an in-progress session of any mode is resumed (200)", async () => {
    const { user, quiz } = await finishedRound();
    const missed = await w.sessions.startSession(user, quiz.quizId, "missed");
    for (const mode of ["missed", "full", "review"] as const) {
      const resumed = await w.sessions.startSession(user, quiz.quizId, mode);
      expect([resumed.created, resumed.session.id, resumed.session.mode]).toEqual([
        false,
        missed.session.id,
        "missed",
      ]);
    }
    await w.sessions.completeSession(user, missed.session.id);
    const full = await w.sessions.startSession(user, quiz.quizId);
    const resumed = await w.sessions.startSession(user, quiz.quizId, "missed");
    expect([resumed.created, resumed.session.id, resumed.session.mode]).toEqual([
      false,
      full.session.id,
      "full",
    ]);
  });

  it("when missed and full starts race, one creates and the others resume it", async () => {
    for (let round = 0; round < 3; round++) {
      const { user, quiz } = await finishedRound();
      const results = await Promise.all([
        w.sessions.startSession(user, quiz.quizId, "missed"),
        w.sessions.startSession(user, quiz.quizId),
        w.sessions.startSession(user, quiz.quizId, "missed"),
      ]);
      expect(results.filter((r) => r.created)).toHaveLength(1);
      expect(new Set(results.map((r) => r.session.id)).size).toBe(1);
    }
  });

  it("is failed_precondition with nothing to retry, and writes nothing", async () => {
    const user = newUser();
    const quiz = await insertQuiz(w.db, { questions: 2 });
    const [q1, q2] = quiz.questionIds as [string, string];
    // No completed session yet.
    const never = await rejection(
      w.sessions.startSession(user, quiz.quizId, "missed"),
      Code.FailedPrecondition,
    );
    expect(never.rawMessage).toMatch(/you have not completed this quiz yet/);
    // All answered correctly.
    const { session } = await w.sessions.startSession(user, quiz.quizId);
    for (const [questionId, userAnswer] of [
      [q1, right(1)],
      [q2, ` ${right(2).toLowerCase()} `],
    ] as const) {
      await w.sessions.submitAnswer(user, { sessionId: session.id, questionId, userAnswer });
    }
    await w.sessions.completeSession(user, session.id);
    const err = await rejection(
      w.sessions.startSession(user, quiz.quizId, "missed"),
      Code.FailedPrecondition,
    );
    expect(err.rawMessage).toMatch(/no question was missed/);
    const page = await w.sessions.listSessions(user, { quizId: quiz.quizId });
    expect(page.sessions.map((s) => s.mode)).toEqual(["full"]);
  });

  it("leaves out a question deleted since, and is not_found on a missing quiz", async () => {
    const { user, quiz, q } = await finishedRound();
    await w.db.deleteFrom("questions").where("id", "=", q[1]).execute();
    const missed = await w.sessions.startSession(user, quiz.quizId, "missed");
    expect(missed.questions.map((x) => x.questionId)).toEqual([q[2], q[3]]);
    await rejection(w.sessions.startSession(user, "999999", "missed"), Code.NotFound);
  });

  it("takes the quiz's order, not the order of a review session it retries", async () => {
    const user = newUser();
    const quiz = await insertQuiz(w.db, { questions: 3 });
    const [q1, q2, q3] = quiz.questionIds as [string, string, string];
    const { session } = await w.sessions.startSession(user, quiz.quizId);
    // q3 answered first: due first, so the review holds q3, q1, q2.
    for (const questionId of [q3, q1, q2]) {
      await w.sessions.submitAnswer(user, { sessionId: session.id, questionId, userAnswer: "no" });
      w.clock.advance(1000);
    }
    await w.sessions.completeSession(user, session.id);
    w.clock.advance(2 * MINUTE);
    const review = await w.sessions.startSession(user, quiz.quizId, "review");
    expect(review.questions.map((x) => x.questionId)).toEqual([q3, q1, q2]);
    await w.sessions.completeSession(user, review.session.id);
    const missed = await w.sessions.startSession(user, quiz.quizId, "missed");
    expect(missed.questions.map((x) => x.questionId)).toEqual([q1, q2, q3]);
  });
});
