/**
 * `npm run bench:answer`: what the review memory adds to SubmitAnswer, in one
 * run on MariaDB. Each round answers every question of a batch of fresh
 * sessions twice over, once through the use case as it is (the answer, the
 * session's counts, the learner's memory and the event in one transaction)
 * and once through the same transaction without the memory's two statements
 * (the answer as it was before review), the two interleaved and their order
 * alternated, so that both see the same machine. It reports time per answer.
 *
 * BENCH_QUICK=1: two short rounds. BENCH_DATABASE_URL names the MySQL server.
 */
import { randomBytes } from "node:crypto";
import { PracticeSessions } from "../src/app/practice-sessions.js";
import { createDatabaseIfMissing, dropDatabase, openDatabase } from "../src/db/connect.js";
import type { Db } from "../src/db/database.js";
import { migrateToLatest } from "../src/db/migrate.js";
import { insertEvents } from "../src/db/outbox-repository.js";
import {
  countAnswer,
  findSnapshotQuestion,
  insertAnswer,
  lockSession,
} from "../src/db/practice-sessions-repository.js";
import { systemClock } from "../src/domain/clock.js";
import { answerSubmitted } from "../src/domain/events.js";
import { isCorrectAnswer } from "../src/domain/scoring.js";
import { withProgress } from "../src/domain/session.js";
import { outboxEvent } from "../src/events/cloud-event.js";
import { log } from "./lib/children.js";
import { writeReport } from "./lib/report.js";

const QUICK = process.env.BENCH_QUICK === "1";
const SERVER_URL = process.env.BENCH_DATABASE_URL ?? "mysql://root@127.0.0.1:3306/";
const ROUNDS = QUICK ? 2 : 12;
const SESSIONS = QUICK ? 10 : 100;
const QUESTIONS = 10;
const PARALLEL = 8;

type Variant = "with memory" | "without memory";

/** The answer's transaction without the memory: what SubmitAnswer wrote before review. */
async function answerWithoutMemory(db: Db, userId: string, sessionId: string, questionId: string) {
  await db.transaction().execute(async (trx) => {
    const session = await lockSession(trx, userId, sessionId);
    const question = await findSnapshotQuestion(trx, sessionId, questionId);
    if (!session || !question) throw new Error("no such session or question");
    const answeredAt = systemClock.now();
    const isCorrect = isCorrectAnswer("A1", question.correctAnswer);
    await insertAnswer(trx, {
      session_id: sessionId,
      question_id: questionId,
      user_answer: "A1",
      is_correct: isCorrect,
      answered_at: answeredAt,
    });
    await countAnswer(trx, sessionId, isCorrect);
    const after = withProgress({
      ...session,
      correctAnswers: session.correctAnswers + (isCorrect ? 1 : 0),
      answeredQuestions: session.answeredQuestions + 1,
    });
    await insertEvents(trx, [
      outboxEvent(answerSubmitted(userId, after, { questionId, isCorrect, answeredAt })),
    ]);
  });
}

async function main() {
  const url = new URL(SERVER_URL);
  url.pathname = `/practice_bench_${randomBytes(4).toString("hex")}`;
  await createDatabaseIfMissing(url.toString());
  const { db, close } = openDatabase({
    url: url.toString(),
    poolSize: PARALLEL,
    connectTimeoutMs: 5000,
  });
  const perAnswer: Record<Variant, number[]> = { "with memory": [], "without memory": [] };
  try {
    await migrateToLatest(db);
    const sessions = new PracticeSessions(db, systemClock);
    const guide = await db.insertInto("study_guides").values({ title: "bench" }).executeTakeFirst();
    const quiz = await db
      .insertInto("quizzes")
      .values({ study_guide_id: String(guide.insertId), title: "answers" })
      .executeTakeFirst();
    const quizId = String(quiz.insertId);
    const questionIds: string[] = [];
    for (let i = 1; i <= QUESTIONS; i++) {
      const q = await db
        .insertInto("questions")
        .values({ quiz_id: quizId, position: i, prompt: `Q${i}?`, correct_answer: `A${i}` })
        .executeTakeFirst();
      questionIds.push(String(q.insertId));
    }

    const round = async (r: number, variant: Variant) => {
      const started = await Promise.all(
        Array.from({ length: SESSIONS }, async (_, i) => {
          const user = `answer-${variant === "with memory" ? "m" : "b"}-${r}-${i}`;
          const { session } = await sessions.startSession(user, quizId);
          return { user, id: session.id };
        }),
      );
      let next = 0;
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: PARALLEL }, async () => {
          while (next < started.length) {
            const s = started[next++];
            if (!s) break;
            for (const questionId of questionIds) {
              if (variant === "with memory") {
                await sessions.submitAnswer(s.user, {
                  sessionId: s.id,
                  questionId,
                  userAnswer: "A1",
                });
              } else {
                await answerWithoutMemory(db, s.user, s.id, questionId);
              }
            }
          }
        }),
      );
      const us = ((performance.now() - t0) * 1000) / (SESSIONS * QUESTIONS);
      perAnswer[variant].push(us);
      log(`round ${r} ${variant}: ${us.toFixed(0)} µs per answer`);
    };
    // Warm-up rounds of each, not counted.
    for (const r of [-2, -1]) {
      await round(r, "with memory");
      await round(r, "without memory");
    }
    perAnswer["with memory"].length = 0;
    perAnswer["without memory"].length = 0;
    for (let r = 0; r < ROUNDS; r++) {
      const order: Variant[] =
        r % 2 === 0 ? ["with memory", "without memory"] : ["without memory", "with memory"];
      for (const variant of order) await round(r, variant);
    }
  } finally {
    await close();
    await dropDatabase(url.toString());
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
  const withMemory = median(perAnswer["with memory"]);
  const without = median(perAnswer["without memory"]);
  const lines = [
    `# SubmitAnswer with and without the review memory (${ROUNDS} rounds of ${SESSIONS * QUESTIONS} answers, ${PARALLEL} at a time, MariaDB)`,
    "",
    "| variant | median µs per answer | rounds (µs per answer) |",
    "|---|---:|---|",
    ...(Object.entries(perAnswer) as [Variant, number[]][]).map(
      ([v, xs]) =>
        `| ${v} | ${median(xs).toFixed(0)} | ${xs.map((x) => x.toFixed(0)).join(", ")} |`,
    ),
    "",
    `The memory adds ${(((withMemory - without) / without) * 100).toFixed(1)}% per answer.`,
  ];
  writeReport("answer-cost", lines.join("\n"), perAnswer);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
