import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { AnswerConflict } from "../../src/app/errors.js";
import { PracticeSessions } from "../../src/app/practice-sessions.js";
import {
  countAnswer,
  insertAnswer,
  lockSession,
} from "../../src/db/practice-sessions-repository.js";
import { testStore } from "../support/database.js";
import { countRows, insertQuestion, insertQuiz } from "../support/fixtures.js";
import { newUser, rejection, useCaseWorld } from "../support/use-cases.js";

// SubmitAnswer, CompleteSession and GetSession rules, on the use cases themselves.
const w = useCaseWorld();

async function started(questions = 3) {
  const user = newUser();
  const quiz = await insertQuiz(w.db, { questions });
  const { session } = await w.sessions.startSession(user, quiz.quizId);
  return { user, quiz, session, q: quiz.questionIds };
}

const writes = async () => ({
  sessions: await countRows(w.db, "practice_sessions"),
  answers: await countRows(w.db, "practice_session_answers"),
  events: await countRows(w.db, "practice_outbox"),
});

describe("submitAnswer", () => {
  it("decides is_correct itself: trimmed, case-insensitive, after NFC; counts correct answers", async () => {
    const { user, session, q, quiz } = await started(4);
    await w.db
      .updateTable("questions")
      .set({ correct_answer: "Café" })
      .where("id", "=", q[3] ?? "")
      .execute();
    const verdicts = [];
    for (const [i, text] of [" a1 ", "wrong", "A3", "cafe\u0301"].entries()) {
      w.clock.advance(1000);
      const res = await w.sessions.submitAnswer(user, {
        sessionId: session.id,
        questionId: q[i] ?? "",
        userAnswer: text,
      });
      expect(res.answer).toEqual({
        questionId: q[i],
        userAnswer: text,
        isCorrect: i !== 1,
        answeredAt: w.clock.now(),
      });
      verdicts.push(res.session.correctAnswers);
    }
    expect(verdicts).toEqual([1, 1, 2, 3]);
    const { session: detail } = await w.sessions.getSession(user, session.id);
    expect(detail).toMatchObject({ quizId: quiz.quizId, correctAnswers: 3, completedAt: null });
    expect(detail.answers.map((a) => a.userAnswer)).toEqual([" a1 ", "wrong", "A3", "cafe\u0301"]);
  });

  it("takes the same answer again as a retry: the stored answer, nothing written, no event", async () => {
    const { user, session, q } = await started();
    const input = { sessionId: session.id, questionId: q[0] ?? "", userAnswer: "A1" };
    const first = await w.sessions.submitAnswer(user, input);
    expect(first.created).toBe(true);
    const before = await writes();
    w.clock.advance(5000);
    const again = await w.sessions.submitAnswer(user, input);
    expect(again).toEqual({ ...first, created: false });
    expect(await writes()).toEqual(before);
  });

  it("stores an answer in three requests to MySQL (five statements on SQLite) when its session does not move meanwhile", async () => {
    // Kysely also shows a plugin each sub-query: count what ran, by its result.
    const kindOf = new Map<unknown, string>();
    const kinds: string[] = [];
    const counting = w.db.withPlugin({
      transformQuery: ({ node, queryId }) => {
        kindOf.set(queryId, node.kind);
        return node;
      },
      transformResult: async ({ result, queryId }) => {
        kinds.push(kindOf.get(queryId) ?? "raw");
        return result;
      },
    });
    const sessions = new PracticeSessions(counting, w.clock);
    const { user, session, q } = await started();
    kinds.length = 0;
    await sessions.submitAnswer(user, {
      sessionId: session.id,
      questionId: q[0] ?? "",
      userAnswer: "A1",
    });
    // The session with the question's context, its count, then the answer,
    // the memory and the event: on MySQL the three writes in one request.
    const writes =
      testStore() === "mysql" ? ["raw"] : ["InsertQueryNode", "InsertQueryNode", "InsertQueryNode"];
    expect(kinds).toEqual(["SelectQueryNode", "UpdateQueryNode", ...writes]);
    const stored = await w.db
      .selectFrom("practice_session_answers")
      .select(["user_answer", "is_correct"])
      .where("session_id", "=", session.id)
      .execute();
    expect(stored).toEqual([{ user_answer: "A1", is_correct: 1 }]);
    const memory = await w.db
      .selectFrom("practice_question_memory")
      .select("reps")
      .where("user_id", "=", user)
      .execute();
    expect(memory).toEqual([{ reps: 1 }]);
  });

  /**
   * The use case on `w.db`, with `meanwhile` run once on another connection
   * right after its first read (MySQL: a real second connection).
   */
  function afterFirstRead(meanwhile: () => Promise<unknown>) {
    let done = false;
    const kindOf = new Map<unknown, string>();
    const db = w.db.withPlugin({
      transformQuery: ({ node, queryId }) => {
        kindOf.set(queryId, node.kind);
        return node;
      },
      transformResult: async ({ result, queryId }) => {
        if (!done && kindOf.get(queryId) === "SelectQueryNode") {
          done = true;
          await meanwhile();
        }
        return result;
      },
    });
    return new PracticeSessions(db, w.clock);
  }

  it.runIf(testStore() === "mysql")(
    "writes nothing when the question is deleted between its read and the answer's writes",
    async () => {
      const { user, session, q } = await started();
      const questionId = q[0] ?? "";
      const before = await writes();
      const sessions = afterFirstRead(() =>
        w.db.deleteFrom("questions").where("id", "=", questionId).execute(),
      );
      await rejection(
        sessions.submitAnswer(user, { sessionId: session.id, questionId, userAnswer: "A1" }),
        Code.InvalidArgument,
      );
      expect(await writes()).toEqual(before);
      const counted = await w.db
        .selectFrom("practice_sessions")
        .select(["answered_questions", "correct_answers"])
        .where("id", "=", session.id)
        .executeTakeFirstOrThrow();
      expect(counted).toEqual({ answered_questions: 0, correct_answers: 0 });
      const memory = await w.db
        .selectFrom("practice_question_memory")
        .select("reps")
        .where("user_id", "=", user)
        .execute();
      expect(memory).toEqual([]);
    },
  );

  it.runIf(testStore() === "mysql")(
    "answers again when the learner's memory moves between its read and the answer's writes",
    async () => {
      const user = newUser();
      const quiz = await insertQuiz(w.db, { questions: 2 });
      const questionId = quiz.questionIds[0] ?? "";
      const first = await w.sessions.startSession(user, quiz.quizId);
      await w.sessions.submitAnswer(user, {
        sessionId: first.session.id,
        questionId,
        userAnswer: "A1",
      });
      await w.sessions.completeSession(user, first.session.id);
      const { session } = await w.sessions.startSession(user, quiz.quizId);
      const before = await writes();
      const moved = () =>
        w.db
          .updateTable("practice_question_memory")
          .set((eb) => ({ reps: eb("reps", "+", 10) }))
          .where("user_id", "=", user)
          .where("question_id", "=", questionId)
          .execute();
      const sessions = afterFirstRead(moved);
      const res = await sessions.submitAnswer(user, {
        sessionId: session.id,
        questionId,
        userAnswer: "wrong",
      });
      expect(res.created).toBe(true);
      // One answer and one event more, the memory moved on from what the other write left.
      expect(await writes()).toEqual({
        ...before,
        answers: before.answers + 1,
        events: before.events + 1,
      });
      const memory = await w.db
        .selectFrom("practice_question_memory")
        .select(["reps", "last_correct"])
        .where("user_id", "=", user)
        .where("question_id", "=", questionId)
        .executeTakeFirstOrThrow();
      expect(memory).toEqual({ reps: 12, last_correct: 0 });
    },
  );

  it("replays an answer another call stored while it waited for the session's lock", async () => {
    const { user, session, q } = await started();
    const questionId = q[1] ?? "";
    const input = { sessionId: session.id, questionId, userAnswer: "A2" };
    let submitted: Promise<unknown> | undefined;
    await w.db.transaction().execute(async (trx) => {
      await lockSession(trx, user, session.id);
      await insertAnswer(trx, {
        session_id: session.id,
        question_id: questionId,
        user_answer: "A2",
        is_correct: true,
        answered_at: w.clock.now(),
      });
      await countAnswer(trx, session.id, true);
      submitted = w.sessions.submitAnswer(user, input);
      // Long enough for the answer to read what it can and wait on the lock.
      await new Promise((resolve) => setTimeout(resolve, 200));
    });
    expect(await submitted).toMatchObject({ created: false, answer: { userAnswer: "A2" } });
    const { session: detail } = await w.sessions.getSession(user, session.id);
    expect(detail).toMatchObject({ answeredQuestions: 1, correctAnswers: 1 });
  });

  it("refuses a different answer with already_exists, carrying the stored answer; writes nothing", async () => {
    const { user, session, q } = await started();
    const input = { sessionId: session.id, questionId: q[0] ?? "", userAnswer: "A1" };
    const first = await w.sessions.submitAnswer(user, input);
    const before = await writes();
    // Byte for byte: another case or trailing white space is another answer.
    for (const userAnswer of ["a1", "A1 ", "wrong"]) {
      const err = await rejection(
        w.sessions.submitAnswer(user, { ...input, userAnswer }),
        Code.AlreadyExists,
      );
      expect(err).toBeInstanceOf(AnswerConflict);
      expect((err as AnswerConflict).storedAnswer).toEqual(first.answer);
    }
    expect(await writes()).toEqual(before);
  });

  it("after completion, answers a retry of an answer with it and refuses a different one with already_exists", async () => {
    const { user, session, q } = await started();
    const input = { sessionId: session.id, questionId: q[0] ?? "", userAnswer: "A1" };
    const first = await w.sessions.submitAnswer(user, input);
    const done = await w.sessions.completeSession(user, session.id);
    const before = await writes();
    const again = await w.sessions.submitAnswer(user, input);
    expect(again.created).toBe(false);
    expect(again.answer).toEqual(first.answer);
    expect(again.session).toMatchObject({
      completedAt: done.completedAt,
      scorePercentage: done.scorePercentage,
      answeredQuestions: 1,
    });
    await rejection(
      w.sessions.submitAnswer(user, { ...input, userAnswer: "B" }),
      Code.AlreadyExists,
    );
    expect(await writes()).toEqual(before);
  });

  // What an answer may be (1 to 1000 characters, not only white space) is the request's rule,
  // checked before a use case runs (test/in-process/request-rules.test.ts).
  it("stores 1000 characters counted as code points as they were sent", async () => {
    const { user, session, q } = await started();
    const ok = await w.sessions.submitAnswer(user, {
      sessionId: session.id,
      questionId: q[0] ?? "",
      userAnswer: "😀".repeat(1000),
    });
    expect(ok.answer.userAnswer).toBe("😀".repeat(1000));
  });

  it("refuses questions outside the snapshot (another quiz's, added later, deleted, none, malformed)", async () => {
    const { user, session, quiz, q } = await started();
    const other = (await insertQuiz(w.db)).questionIds[0] ?? "";
    const later = await insertQuestion(w.db, quiz.quizId, 9);
    await w.db
      .deleteFrom("questions")
      .where("id", "=", q[2] ?? "")
      .execute();
    const before = await writes();
    for (const questionId of [other, later, q[2] ?? "", "99999999", "q-1", ""]) {
      const input = { sessionId: session.id, questionId, userAnswer: "A" };
      const err = await rejection(w.sessions.submitAnswer(user, input), Code.InvalidArgument);
      expect(err.rawMessage).toBe("question_id is not a question of this session");
    }
    expect(await writes()).toEqual(before);
  });

  it("is not_found for another user's session or an id that names none, failed_precondition once completed", async () => {
    const { user, session, q } = await started();
    const input = { sessionId: session.id, questionId: q[0] ?? "", userAnswer: "A1" };
    await rejection(w.sessions.submitAnswer(newUser(), input), Code.NotFound);
    for (const sessionId of ["01900000-0000-7000-8000-000000000000", "nope"]) {
      await rejection(w.sessions.submitAnswer(user, { ...input, sessionId }), Code.NotFound);
    }
    await w.sessions.completeSession(user, session.id);
    const before = await writes();
    await rejection(w.sessions.submitAnswer(user, input), Code.FailedPrecondition);
    expect(await writes()).toEqual(before);
  });
});

describe("completeSession", () => {
  it.each([
    [8, 1, 13], // 12.5 rounds half up
    [3, 2, 67],
    [3, 0, 0],
    [3, 3, 100],
  ])(
    "of %i questions with %i right sets completed_at; the score is %i",
    async (n, right, score) => {
      const { user, session, q } = await started(n);
      for (let i = 0; i < right; i++) {
        const input = { sessionId: session.id, questionId: q[i] ?? "", userAnswer: `A${i + 1}` };
        await w.sessions.submitAnswer(user, input);
      }
      w.clock.advance(60_000);
      const done = await w.sessions.completeSession(user, session.id);
      expect(done).toMatchObject({
        completedAt: w.clock.now(),
        correctAnswers: right,
        totalQuestions: n,
        scorePercentage: score,
        expiresAt: null,
      });
    },
  );

  it("answers a second completion with the same completed session, writing nothing", async () => {
    const { user, session, q } = await started();
    await w.sessions.submitAnswer(user, {
      sessionId: session.id,
      questionId: q[0] ?? "",
      userAnswer: "A1",
    });
    const first = await w.sessions.completeSession(user, session.id);
    const before = await writes();
    w.clock.advance(5000);
    const again = await w.sessions.completeSession(user, session.id);
    expect(again).toEqual(first);
    expect(again).toMatchObject({ scorePercentage: 33, completedAt: first.completedAt });
    expect(await writes()).toEqual(before);
  });

  it("is not_found for another user's session, which stays in progress", async () => {
    const { user, session } = await started();
    await rejection(w.sessions.completeSession(newUser(), session.id), Code.NotFound);
    await rejection(w.sessions.completeSession(user, "not-a-session"), Code.NotFound);
    const { session: detail } = await w.sessions.getSession(user, session.id);
    expect(detail.completedAt).toBeNull();
  });
});

describe("getSession", () => {
  it("returns the snapshot, answers oldest first, after the quiz and its guide are soft-deleted", async () => {
    const { user, session, quiz, q } = await started();
    for (const i of [2, 0]) {
      w.clock.advance(1000);
      const input = { sessionId: session.id, questionId: q[i] ?? "", userAnswer: `A${i + 1}` };
      await w.sessions.submitAnswer(user, input);
    }
    const deletedAt = new Date();
    await w.db
      .updateTable("quizzes")
      .set({ deleted_at: deletedAt })
      .where("id", "=", quiz.quizId)
      .execute();
    await w.db
      .updateTable("study_guides")
      .set({ deleted_at: deletedAt })
      .where("id", "=", quiz.studyGuideId)
      .execute();
    const detail = await w.sessions.getSession(user, session.id);
    expect(detail.session.answers.map((a) => a.questionId)).toEqual([q[2], q[0]]);
    expect(detail.questions).toEqual(
      q.map((id, i) => ({ position: i + 1, questionId: id, correctAnswer: null })),
    );
  });

  it("is not_found, one message, for another user's session, an unknown id and a malformed id", async () => {
    const { session } = await started();
    const messages = new Set<string>();
    for (const [user, id] of [
      [newUser(), session.id],
      ["anyone", "01900000-0000-7000-8000-000000000001"],
      ["anyone", "x"],
    ] as const) {
      messages.add((await rejection(w.sessions.getSession(user, id), Code.NotFound)).rawMessage);
    }
    expect([...messages]).toEqual(["session not found"]);
  });
});
