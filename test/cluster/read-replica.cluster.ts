import { sql } from "kysely";
import { createConnection } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { openDatabase } from "../../src/db/connect.js";
import { insertQuiz, type QuizFixture } from "../support/fixtures.js";
import { defaultDatabaseLimits } from "../support/settings.js";
import {
  inRounds,
  nth,
  type Replicas,
  startReplicas,
  timings,
  withDatabase,
} from "./support/replicas.js";

/**
 * A MariaDB primary with an async replica: two service replicas write to the
 * primary and route ListSessions and GetSession to the replica through a
 * SELECT-only account (DATABASE_READ_URL); a third reads only the primary,
 * for the cost comparison.
 */
const ROUNDS = Number(process.env.CLUSTER_ROUNDS ?? 300);
const PARALLEL = 4;
const READER = "practice_read";

const cluster = inject("cluster");
let svc: Replicas;
let quiz: QuizFixture;

beforeAll(async () => {
  const primary = await createConnection({ uri: cluster.primary });
  try {
    await primary.query(
      `CREATE USER IF NOT EXISTS '${READER}'@'127.0.0.1' IDENTIFIED BY 'read-only'`,
    );
  } finally {
    await primary.end();
  }
  const readUrl = new URL(cluster.replica);
  readUrl.username = READER;
  readUrl.password = "read-only";
  svc = await startReplicas([cluster.primary, cluster.primary, cluster.primary], {
    readUrl: readUrl.toString(),
    routed: 2,
  });
  quiz = await insertQuiz(nth(svc.replicas, 0).db, { questions: 3 });
});

afterAll(async () => {
  await svc?.close();
});

describe("on a primary with an async read replica (DATABASE_READ_URL)", () => {
  it("reads the caller's writes through the replica: 0 misses", async () => {
    const [writer, reader, primaryOnly] = [0, 1, 2].map((i) => nth(svc.replicas, i));
    if (!writer || !reader || !primaryOnly) throw new Error("three replicas");
    // The same reads straight from the replica, without waiting: what routing must avoid.
    const raw = openDatabase({
      url: withDatabase(cluster.replica, svc.database),
      poolSize: 4,
      connectTimeoutMs: 2000,
      limits: defaultDatabaseLimits(),
    });
    const violations = {
      getMissed: 0,
      listMissed: 0,
      answerMissed: 0,
      quizMissed: 0,
      errors: 0,
    };
    let rawMisses = 0;
    const routedMs: number[] = [];
    const primaryMs: number[] = [];
    try {
      await inRounds(ROUNDS, PARALLEL, async (r) => {
        const user = `replica-${r}`;
        const started = await writer.rest(user, "POST", `/quizzes/${quiz.quizId}/sessions`);
        if (started.status !== 201) violations.errors++;
        const id = started.body.id as string;
        const [direct, got, list] = await Promise.all([
          sql`SELECT id FROM practice_sessions WHERE id = ${id}`.execute(raw.db),
          timed(routedMs, () => reader.rest(user, "GET", `/sessions/${id}`)),
          reader.rest(user, "GET", `/quizzes/${quiz.quizId}/sessions`),
        ]);
        if (direct.rows.length === 0) rawMisses++;
        if (got.status !== 200) violations.getMissed++;
        if (!list.body?.sessions?.some((s: { id: string }) => s.id === id)) violations.listMissed++;
        // An answer, then GetSession through the replica must show it.
        await writer.rest(user, "POST", `/sessions/${id}/answers`, {
          question_id: quiz.questionIds[0],
          user_answer: "A1",
        });
        const after = await reader.rest(user, "GET", `/sessions/${id}`);
        if (after.body?.answers?.length !== 1) violations.answerMissed++;
        await timed(primaryMs, () => primaryOnly.rest(user, "GET", `/sessions/${id}`));
        // Content written on the primary a moment ago: GetQuiz through the replica sees it.
        if (r % 3 === 0) {
          const fresh = await insertQuiz(writer.db, { questions: 1 });
          const content = await reader.rest(user, "GET", `/quizzes/${fresh.quizId}`);
          if (content.status !== 200) violations.quizMissed++;
        }
      });
    } finally {
      await raw.close();
    }
    const stats = { ...reader.reads?.stats };
    console.log(
      `[replica] read-your-writes: ${ROUNDS} rounds (start, then get + list, answer, then get; a new quiz then GetQuiz every 3rd round); violations ${JSON.stringify(violations)}; the same read straight from the replica missed ${rawMisses}/${ROUNDS}; routed reads ${JSON.stringify(stats)}; GetSession routed ${timings(routedMs)} vs primary only ${timings(primaryMs)}`,
    );
    expect(violations).toEqual({
      getMissed: 0,
      listMissed: 0,
      answerMissed: 0,
      quizMissed: 0,
      errors: 0,
    });
    expect(stats.replica).toBeGreaterThan(0);
  });

  it("gives the replica account no way to write, and replication keeps running", async () => {
    const readUrl = new URL(withDatabase(cluster.replica, svc.database));
    readUrl.username = READER;
    readUrl.password = "read-only";
    const reader = await createConnection({ uri: readUrl.toString() });
    let refused: { errno?: number } | undefined;
    try {
      await reader.query(
        "UPDATE practice_sessions SET correct_answers = correct_answers + 1 WHERE user_id = 'x'",
      );
    } catch (err) {
      refused = err as { errno?: number };
    } finally {
      await reader.end();
    }
    // read_only (1290) refuses it first; without it the grant would (1142).
    expect([1142, 1290]).toContain(refused?.errno);
    const replica = await createConnection({ uri: cluster.replica });
    try {
      const [rows] = await replica.query("SHOW SLAVE STATUS");
      const status = (rows as Record<string, unknown>[])[0];
      expect(status?.Slave_IO_Running).toBe("Yes");
      expect(status?.Slave_SQL_Running).toBe("Yes");
    } finally {
      await replica.end();
    }
  });
});

async function timed<T>(into: number[], run: () => Promise<T>): Promise<T> {
  const t0 = performance.now();
  try {
    return await run();
  } finally {
    into.push(performance.now() - t0);
  }
}
