/**
 * `npm run bench:answer`: what the review memory adds to SubmitAnswer, in one
 * run on MariaDB. Each round answers every question of a batch of fresh
 * sessions through each variant, interleaved, their order turned each round,
 * so that all see the same machine: the use case as it is (the answer, the
 * session's count, the learner's memory and the event in one transaction),
 * and the transaction without the memory as it was before review (the
 * session locked, the question read, the answer, the count, the event, one
 * statement each). It reports time and CPU (this process's, where the use
 * case and the driver run) per answer.
 *
 * BENCH_BEFORE=/path/to/checkout adds a third, that checkout's SubmitAnswer
 * (its build's use case, on the same database): the answer as it was in
 * that release, use case and all.
 *
 * BENCH_QUICK=1: two short rounds. BENCH_DATABASE_URL names the MySQL server.
 */
import { randomBytes } from "node:crypto";
import { PracticeSessions } from "../src/app/practice-sessions.js";
import { loadConfig } from "../src/config.js";
import { createDatabaseIfMissing, dropDatabase, openDatabase } from "../src/db/connect.js";
import type { Db } from "../src/db/database.js";
import { migrateToLatest } from "../src/db/migrate.js";
import { outboxEvent } from "../src/db/outbox-event.js";
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
import { databaseLimits } from "../src/edge/call-limits.js";
import { log } from "./lib/children.js";
import { writeReport } from "./lib/report.js";

const QUICK = process.env.BENCH_QUICK === "1";
const SERVER_URL = process.env.BENCH_DATABASE_URL ?? "mysql://root@127.0.0.1:3306/";
const ROUNDS = QUICK ? 2 : 12;
const SESSIONS = QUICK ? 10 : 100;
const QUESTIONS = 10;
const PARALLEL = 8;
const BEFORE = process.env.BENCH_BEFORE;

type Variant = "with memory" | "without memory" | "before";

/** What answers one question of a session: a variant. */
type AnswerFn = (userId: string, sessionId: string, questionId: string) => Promise<unknown>;

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
    limits: databaseLimits(loadConfig({})),
  });
  const perAnswer: Partial<Record<Variant, number[]>> = {};
  const cpuPerAnswer: Partial<Record<Variant, number[]>> = {};
  let closeBefore = async () => {};
  try {
    await migrateToLatest(db);
    const sessions = new PracticeSessions(db, systemClock);
    const answer: Partial<Record<Variant, AnswerFn>> = {
      "with memory": (userId, sessionId, questionId) =>
        sessions.submitAnswer(userId, { sessionId, questionId, userAnswer: "A1" }),
      "without memory": (userId, sessionId, questionId) =>
        answerWithoutMemory(db, userId, sessionId, questionId),
    };
    if (BEFORE) {
      // That build's own use case and pool, on this (migrated) database.
      const dist = `${BEFORE.replace(/\/$/, "")}/dist/src`;
      const app = await import(`${dist}/app/practice-sessions.js`);
      const conn = await import(`${dist}/db/connect.js`);
      const clock = await import(`${dist}/domain/clock.js`);
      const handle = conn.openDatabase({
        url: url.toString(),
        poolSize: PARALLEL,
        connectTimeoutMs: 5000,
        limits: databaseLimits(loadConfig({})),
      });
      closeBefore = () => handle.close();
      const before = new app.PracticeSessions(handle.db, clock.systemClock);
      answer.before = (userId, sessionId, questionId) =>
        before.submitAnswer(userId, { sessionId, questionId, userAnswer: "A1" });
    }
    const variants = Object.keys(answer) as Variant[];
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
      const answerOne = answer[variant] as AnswerFn;
      const started = await Promise.all(
        Array.from({ length: SESSIONS }, async (_, i) => {
          const user = `answer-${variants.indexOf(variant)}-${r}-${i}`;
          const { session } = await sessions.startSession(user, quizId);
          return { user, id: session.id };
        }),
      );
      let next = 0;
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: PARALLEL }, async () => {
          while (next < started.length) {
            const s = started[next++];
            if (!s) break;
            for (const questionId of questionIds) await answerOne(s.user, s.id, questionId);
          }
        }),
      );
      const us = ((performance.now() - t0) * 1000) / (SESSIONS * QUESTIONS);
      const cpu = process.cpuUsage(cpu0);
      const cpuUs = (cpu.user + cpu.system) / (SESSIONS * QUESTIONS);
      perAnswer[variant] = [...(perAnswer[variant] ?? []), us];
      cpuPerAnswer[variant] = [...(cpuPerAnswer[variant] ?? []), cpuUs];
      log(`round ${r} ${variant}: ${us.toFixed(0)} µs per answer, ${cpuUs.toFixed(0)} µs CPU`);
    };
    // Warm-up rounds of each, not counted.
    for (const r of [-2, -1]) for (const variant of variants) await round(r, variant);
    for (const variant of variants) {
      perAnswer[variant] = [];
      cpuPerAnswer[variant] = [];
    }
    // Each round in another order, so that no variant always follows the same one.
    for (let r = 0; r < ROUNDS; r++) {
      const shift = r % variants.length;
      const order = [...variants.slice(shift), ...variants.slice(0, shift)];
      for (const variant of r % 2 === 0 ? order : order.reverse()) await round(r, variant);
    }
  } finally {
    await closeBefore();
    await close();
    await dropDatabase(url.toString());
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
  const withMemory = median(perAnswer["with memory"] ?? []);
  const more = (than: Variant) => {
    const base = median(perAnswer[than] ?? []);
    return (((withMemory - base) / base) * 100).toFixed(1);
  };
  const lines = [
    `# SubmitAnswer with and without the review memory (${ROUNDS} rounds of ${SESSIONS * QUESTIONS} answers, ${PARALLEL} at a time, MariaDB)`,
    "",
    "| variant | median µs per answer | median CPU µs per answer (this process) | rounds (µs per answer) |",
    "|---|---:|---:|---|",
    ...(Object.entries(perAnswer) as [Variant, number[]][]).map(
      ([v, xs]) =>
        `| ${v === "before" ? `SubmitAnswer of ${BEFORE}` : v} | ${median(xs).toFixed(0)} | ${median(cpuPerAnswer[v] ?? []).toFixed(0)} | ${xs.map((x) => x.toFixed(0)).join(", ")} |`,
    ),
    "",
    `The memory adds ${more("without memory")}% per answer to the transaction without it.`,
    BEFORE
      ? `SubmitAnswer now takes ×${(median(perAnswer["with memory"] ?? []) / median(perAnswer.before ?? [])).toFixed(3)} the time per answer of ${BEFORE}'s, ×${(median(cpuPerAnswer["with memory"] ?? []) / median(cpuPerAnswer.before ?? [])).toFixed(3)} its CPU.`
      : "",
  ];
  writeReport("answer-cost", lines.join("\n"), perAnswer);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
