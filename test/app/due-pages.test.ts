import { Code } from "@connectrpc/connect";
import { CompiledQuery, sql } from "kysely";
import { describe, expect, it } from "vitest";
import { dueMemoryQuery } from "../../src/db/question-memory-repository.js";
import { decodeDueCursor } from "../../src/domain/cursor.js";
import { rememberAnswer } from "../../src/domain/memory.js";
import { insertQuiz } from "../support/fixtures.js";
import { newUser, rejection, useCaseWorld } from "../support/use-cases.js";

// The due list in keyset pages (limit, cursor), on SQLite and MySQL/MariaDB.
const w = useCaseWorld();

const DUE = 5000;

/** A quiz of questions added with these positions, in this order; its ids in the quiz's order. */
async function quizWithPositions(positions: number[]) {
  const quiz = await insertQuiz(w.db, { questions: 0 });
  for (let i = 0; i < positions.length; i += 500) {
    const rows = positions.slice(i, i + 500).map((position) => ({
      quiz_id: quiz.quizId,
      position,
      prompt: `Q${position}?`,
      correct_answer: `A${position}`,
    }));
    await w.db.insertInto("questions").values(rows).execute();
  }
  const ids = (
    await w.db
      .selectFrom("questions")
      .select("id")
      .where("quiz_id", "=", quiz.quizId)
      .orderBy("position")
      .execute()
  ).map((r) => String(r.id));
  return { quizId: quiz.quizId, ids };
}

/** A quiz of `n` questions, all of them due for `user` now, due a millisecond apart (some tied). */
async function quizAllDue(user: string, n: number) {
  const { quizId, ids } = await quizWithPositions(Array.from({ length: n }, (_, i) => i + 1));
  const start = w.clock.now().getTime() - 2 * 24 * 3600_000;
  // Each pair shares an answer time: tied due times.
  await remember(
    user,
    quizId,
    ids.map((questionId, i) => ({ questionId, answeredAt: new Date(start + Math.floor(i / 2)) })),
  );
  return { quizId, ids };
}

/** The learner's memory of each question as after one wrong answer at `answeredAt`. */
async function remember(
  user: string,
  quizId: string,
  answers: { questionId: string; answeredAt: Date }[],
) {
  for (let i = 0; i < answers.length; i += 500) {
    const rows = answers.slice(i, i + 500).map(({ questionId, answeredAt }) => {
      const m = rememberAnswer(undefined, false, answeredAt);
      return {
        user_id: user,
        question_id: questionId,
        quiz_id: quizId,
        due_at: m.dueAt,
        last_answered_at: m.lastAnsweredAt,
        last_correct: false,
        reps: m.reps,
        lapses: m.lapses,
        state: m.state,
        stability: m.stability,
        difficulty: m.difficulty,
        elapsed_days: m.elapsedDays,
        scheduled_days: m.scheduledDays,
        learning_steps: m.learningSteps,
      };
    });
    await w.db.insertInto("practice_question_memory").values(rows).execute();
  }
}

describe("the due list's pages", () => {
  it(`with ${DUE} due: pages of at most 100, each question once, in order, counts of the whole quiz`, async () => {
    const user = newUser();
    const { quizId, ids } = await quizAllDue(user, DUE);
    const first = await w.sessions.listDueQuestions(user, quizId);
    expect(first.questions).toHaveLength(20);
    expect([first.dueCount, first.newCount]).toEqual([DUE, 0]);
    expect(first.nextCursor).toMatch(/^[A-Za-z0-9_-]+$/);

    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await w.sessions.listDueQuestions(user, quizId, { limit: 100, cursor });
      expect(page.questions.length).toBeLessThanOrEqual(100);
      expect(page.dueCount).toBe(DUE);
      seen.push(...page.questions.map((q) => q.questionId));
      for (const q of page.questions) expect(q.position).toBe(ids.indexOf(q.questionId) + 1);
      cursor = page.nextCursor;
      pages++;
    } while (cursor !== undefined);
    expect(pages).toBe(DUE / 100);
    // Due in the quiz's order here, ties by position.
    expect(seen).toEqual(ids);
  });

  it("ties of due time go by the quiz's order (position), on every page and in a review's snapshot", async () => {
    const user = newUser();
    // Positions against the order of ids: the last question added comes first.
    const N = 9;
    const { quizId, ids: byPosition } = await quizWithPositions(
      Array.from({ length: N }, (_, i) => N - i),
    );
    const t0 = w.clock.now().getTime() - 2 * 24 * 3600_000;
    // Positions 1-3 and 6-9 missed at one time (as left unanswered at a completion),
    // 4 and 5 a second earlier.
    await remember(
      user,
      quizId,
      byPosition.map((questionId, i) => ({
        questionId,
        answeredAt: new Date(i === 3 || i === 4 ? t0 - 1000 : t0),
      })),
    );
    const expected = [3, 4, 0, 1, 2, 5, 6, 7, 8].map((i) => byPosition[i]);
    for (const limit of [1, 2, 4, 100]) {
      const seen: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await w.sessions.listDueQuestions(user, quizId, { limit, cursor });
        seen.push(...page.questions.map((q) => q.questionId));
        cursor = page.nextCursor;
      } while (cursor !== undefined);
      expect(seen, `pages of ${limit}`).toEqual(expected);
    }
    const review = await w.sessions.startSession(user, quizId, "review");
    expect(review.questions.map((q) => q.questionId)).toEqual(expected);
  });

  it("refuses a cursor it did not make: invalid_argument", async () => {
    const user = newUser();
    const quiz = await insertQuiz(w.db, { questions: 1 });
    for (const cursor of ["nope", "djEuMTIzLjQ1Ng", "ZDEuMTIzLmFiYw", "*"]) {
      await rejection(
        w.sessions.listDueQuestions(user, quiz.quizId, { cursor }),
        Code.InvalidArgument,
      );
    }
  });

  it.runIf(process.env.TEST_STORE === "mysql")(
    "reads a page deep in the list from its cursor on MariaDB: memory_by_due, no sort, rows read flat",
    async () => {
      const user = newUser();
      const { quizId } = await quizAllDue(user, DUE);
      await sql`ANALYZE TABLE practice_question_memory`.execute(w.db);
      let cursor: string | undefined;
      for (let i = 0; i < 40; i++) {
        cursor = (await w.sessions.listDueQuestions(user, quizId, { limit: 100, cursor }))
          .nextCursor;
      }
      const after = decodeDueCursor(cursor ?? "");
      const statement = dueMemoryQuery(w.db, user, quizId, w.clock.now(), {
        take: 101,
        afterDueAt: after?.dueAt,
      }).compile();
      // One connection, so the session's counters are this statement's.
      const read = await w.db.connection().execute(async (conn) => {
        const { rows: plan } = await conn.executeQuery<Record<string, unknown>>(
          CompiledQuery.raw(`EXPLAIN ${statement.sql}`, [...statement.parameters]),
        );
        expect(plan[0]?.key).toBe("memory_by_due");
        expect(String(plan[0]?.Extra ?? "")).not.toMatch(/filesort/);
        await sql`FLUSH STATUS`.execute(conn);
        const page = await conn.executeQuery(statement);
        expect(page.rows).toHaveLength(101);
        const { rows } = await sql<{
          Value: string;
        }>`SHOW SESSION STATUS LIKE 'Handler_read%'`.execute(conn);
        return rows.reduce((n, r) => n + Number(r.Value), 0);
      });
      // A page of 101 reads about as many index entries (each with its row), not the 5,000 due.
      expect(read).toBeLessThan(400);
    },
  );
});
