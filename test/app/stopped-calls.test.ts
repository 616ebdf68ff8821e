import { describe, expect, it } from "vitest";
import { countRows, insertQuiz } from "../support/fixtures.js";
import { newUser, useCaseWorld } from "../support/use-cases.js";

// A call whose signal aborts stops its statements: what it wrote is kept whole or not at all.
const w = useCaseWorld();

async function started() {
  const user = newUser();
  const quiz = await insertQuiz(w.db, { questions: 3 });
  const { session } = await w.sessions.startSession(user, quiz.quizId);
  return { user, session, q: quiz.questionIds };
}

const writesOf = async (sessionId: string) => ({
  answers: Number(
    (
      await w.db
        .selectFrom("practice_session_answers")
        .select((eb) => eb.fn.countAll().as("n"))
        .where("session_id", "=", sessionId)
        .executeTakeFirstOrThrow()
    ).n,
  ),
  events: await countRows(w.db, "practice_outbox"),
});

describe("a stopped call", () => {
  it("with its signal already aborted runs nothing and rejects with the signal's reason", async () => {
    const { user, session, q } = await started();
    const before = await writesOf(session.id);
    const reason = new Error("caller left");
    const call = w.sessions.submitAnswer(
      user,
      { sessionId: session.id, questionId: q[0] ?? "", userAnswer: "a1" },
      AbortSignal.abort(reason),
    );
    await expect(call).rejects.toBe(reason);
    expect(await writesOf(session.id)).toEqual(before);
  });

  it("aborted part way through an answer stores it whole or not at all, and later calls run", async () => {
    let stopped = 0;
    let stored = 0;
    // Ever later aborts, by turns of the event loop, until one comes after the answer.
    for (let ticks = 0; stored === 0 && ticks < 100_000; ticks = Math.ceil(ticks * 1.5) + 1) {
      const { user, session, q } = await started();
      const before = await writesOf(session.id);
      const controller = new AbortController();
      const call = w.sessions.submitAnswer(
        user,
        { sessionId: session.id, questionId: q[0] ?? "", userAnswer: "a1" },
        controller.signal,
      );
      for (let i = 0; i < ticks; i++) await new Promise((r) => setImmediate(r));
      controller.abort(new Error("caller left"));
      const outcome = await call.then(
        () => "stored",
        () => "stopped",
      );
      const after = await writesOf(session.id);
      if (outcome === "stopped" && after.answers === 0) {
        stopped++;
        expect(after).toEqual(before);
      } else {
        stored++;
        expect(after.answers).toBe(1);
        expect(after.events).toBeGreaterThan(before.events);
      }
      // The connection went back clean: the same answer, not stopped, is counted once.
      const again = await w.sessions.submitAnswer(user, {
        sessionId: session.id,
        questionId: q[0] ?? "",
        userAnswer: "a1",
      });
      expect(again.answer.isCorrect).toBe(true);
      expect((await writesOf(session.id)).answers).toBe(1);
    }
    // Both ends were reached: early aborts stopped the answer, late ones came after it.
    expect(stopped).toBeGreaterThan(0);
    expect(stored).toBeGreaterThan(0);
  });
});
