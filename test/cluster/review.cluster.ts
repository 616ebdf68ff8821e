import { sql } from "kysely";
import { type Card, createEmptyCard, fsrs, generatorParameters, Rating } from "ts-fsrs";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { insertQuiz, type QuizFixture } from "../support/fixtures.js";
import { inRounds, nth, type Replicas, startReplicas, timings } from "./support/replicas.js";

/**
 * Spaced-repetition memory on a 3-node Galera cluster, one service replica per
 * node: answers to one session's questions go through every node at once, so
 * their transactions conflict on the session's row and are retried; then the
 * same question is answered again in a second session, three times at once.
 * Each learner's memory must then be exactly what ts-fsrs computes from the
 * answers stored: none lost, none counted twice.
 */
const ROUNDS = Number(process.env.CLUSTER_ROUNDS ?? 100);
const PARALLEL = 4;
const reference = fsrs(generatorParameters({ enable_fuzz: false }));

const cluster = inject("cluster");
let svc: Replicas;
let quiz: QuizFixture;

beforeAll(async () => {
  svc = await startReplicas(cluster.galera);
  quiz = await insertQuiz(nth(svc.replicas, 0).db, { questions: 3 });
});

afterAll(async () => {
  await svc?.close();
});

/** Replica i of the three, for round r. */
function on(r: number, i: number) {
  return nth(svc.replicas, (r + i) % svc.replicas.length);
}

describe("review memory on a 3-node Galera cluster", () => {
  it("loses no memory update of answers sent through different nodes", async () => {
    const violations = { lostOrDoubled: 0, notAsTsFsrs: 0, errors: 0 };
    const ms: number[] = [];
    await inRounds(ROUNDS, PARALLEL, async (r) => {
      const user = `memory-${r}`;
      const sessions = `/quizzes/${quiz.quizId}/sessions`;
      const first = await on(r, 0).rest(user, "POST", sessions);
      const t0 = performance.now();
      // One answer per question, each through another node, at once.
      const answers = await Promise.all(
        quiz.questionIds.map((questionId, i) =>
          on(r, i).rest(user, "POST", `/sessions/${first.body.id}/answers`, {
            question_id: questionId,
            user_answer: i === 0 ? "A1" : "wrong",
          }),
        ),
      );
      const done = await on(r, 1).rest(user, "POST", `/sessions/${first.body.id}/complete`);
      // A second session: three different answers to the first question at once (one stands).
      const second = await on(r, 2).rest(user, "POST", sessions);
      const again = await Promise.all(
        [0, 1, 2].map((i) =>
          on(r, i).rest(user, "POST", `/sessions/${second.body.id}/answers`, {
            question_id: quiz.questionIds[0],
            user_answer: i === 0 ? "A1" : `guess ${i}`,
          }),
        ),
      );
      ms.push(performance.now() - t0);
      const statuses = [first, done, second, ...answers, ...again].map((x) => x.status);
      if (
        statuses.some((s) => s >= 500) ||
        answers.some((x) => x.status !== 201) ||
        again.filter((x) => x.status === 201).length !== 1
      ) {
        violations.errors++;
      }

      // What the cluster holds, read through another node than the last writes.
      const db = on(r, 1).db;
      const { rows: stored } = await sql<{
        question_id: string;
        is_correct: number;
        answered_at: Date;
      }>`SELECT a.question_id, a.is_correct, a.answered_at FROM practice_session_answers a
        JOIN practice_sessions s ON s.id = a.session_id
        WHERE s.user_id = ${user} ORDER BY a.answered_at, a.id`.execute(db);
      const memory = await db
        .selectFrom("practice_question_memory")
        .select(["question_id", "due_at", "reps", "lapses"])
        .where("user_id", "=", user)
        .execute();
      for (const questionId of quiz.questionIds) {
        const history = stored.filter((a) => String(a.question_id) === questionId);
        const row = memory.find((m) => String(m.question_id) === questionId);
        if (row?.reps !== history.length) {
          violations.lostOrDoubled++;
          continue;
        }
        let card: Card = createEmptyCard(history[0]?.answered_at ?? new Date());
        let last = 0;
        for (const a of history) {
          // The service counts an answer stamped before the last one at the last one's time.
          const at = new Date(Math.max(a.answered_at.getTime(), last));
          last = at.getTime();
          card = reference.next(card, at, a.is_correct ? Rating.Good : Rating.Again).card;
        }
        if (row.due_at.getTime() !== card.due.getTime() || row.lapses !== card.lapses) {
          violations.notAsTsFsrs++;
        }
      }
    });
    console.log(
      `[galera] review memory: ${ROUNDS} rounds; violations: ` +
        `${Object.entries(violations)
          .map(([k, n]) => `${k} ${n}`)
          .join(", ")}; ${timings(ms)} per round`,
    );
    expect(violations).toEqual({ lostOrDoubled: 0, notAsTsFsrs: 0, errors: 0 });
  });
});
