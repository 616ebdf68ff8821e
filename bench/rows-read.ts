/**
 * `npm run bench:rows`: rows MariaDB reads for one page of ListSessions
 * (the service's own statement, src/db/session-page.ts), first page and a
 * page from the middle of the history, at each history size, from the
 * session's Handler_read_* counters. A keyset page reads about the page,
 * however deep: the counts should not grow with the history.
 *
 * Then the same for what is due on one quiz (ListDueQuestions' statements,
 * src/app/review.ts), as the learner's memory grows to 100,000 rows over
 * other quizzes, with the EXPLAIN of the due read: a range of memory_by_due.
 *
 * BENCH_QUICK=1: histories of 10 and 1,000 only.
 */
import { CompiledQuery, type Kysely, sql } from "kysely";
import { findDueQuestions } from "../src/app/review.js";
import { loadConfig } from "../src/config.js";
import { openDatabase } from "../src/db/connect.js";
import type { Database } from "../src/db/database.js";
import { dueMemoryQuery, nextDueQuery } from "../src/db/question-memory-repository.js";
import { findSessionPage } from "../src/db/session-page.js";
import { decodeCursor } from "../src/domain/cursor.js";
import type { SessionStatus } from "../src/domain/session.js";
import { databaseLimits } from "../src/edge/call-limits.js";
import { log } from "./lib/children.js";
import { generate, MAIN_USER } from "./lib/data.js";
import { memoryHistory } from "./lib/memory-data.js";
import { writeReport } from "./lib/report.js";

const QUICK = process.env.BENCH_QUICK === "1";
const SERVER_URL = process.env.BENCH_DATABASE_URL ?? "mysql://root@127.0.0.1:3306/";
const LEVELS = QUICK ? [10, 1000] : [10, 1000, 100_000];
const TAKE = 21;
const MEMORY_LEVELS = QUICK ? [10, 1000] : [10, 1000, 100_000];

/** The sum of the connection's Handler_read_* counters since the last FLUSH STATUS. */
async function rowsRead(db: Kysely<Database>): Promise<number> {
  const counters = await sql<{
    Variable_name: string;
    Value: string;
  }>`SHOW SESSION STATUS LIKE 'Handler_read%'`.execute(db);
  return counters.rows.reduce((n, r) => n + Number(r.Value), 0);
}

/** EXPLAIN of a compiled statement: the plan's one row, as MariaDB gives it. */
async function explain(db: Kysely<Database>, query: CompiledQuery) {
  const { rows } = await db.executeQuery<Record<string, unknown>>(
    CompiledQuery.raw(`EXPLAIN ${query.sql}`, [...query.parameters]),
  );
  const row = rows[0] ?? {};
  return `type=${row.type} key=${row.key} rows=${row.rows} Extra=${row.Extra ?? ""}`;
}

async function main() {
  const data = await generate(SERVER_URL, LEVELS);
  // One connection: the session counters are this connection's.
  const { db, close } = openDatabase({
    url: data.url,
    poolSize: 1,
    connectTimeoutMs: 5000,
    limits: databaseLimits(loadConfig({})),
  });
  const rows: Record<string, number | string>[] = [];
  const due: Record<string, number | string>[] = [];
  try {
    for (const level of LEVELS) {
      const quizId = data.levelQuiz.get(level) ?? "";
      const deep = decodeCursor(data.deepCursor.get(level) ?? "");
      for (const [page, after] of [
        ["first", undefined],
        ["middle", deep],
      ] as const) {
        for (const status of [undefined, "completed", "active"] as (SessionStatus | undefined)[]) {
          await sql`FLUSH STATUS`.execute(db);
          const found = await findSessionPage(db, {
            userId: MAIN_USER,
            quizId,
            status,
            take: TAKE,
            after,
          });
          const read = await rowsRead(db);
          rows.push({ level, page, status: status ?? "any", returned: found?.length ?? 0, read });
          log(`${level} ${page} ${status ?? "any"}: ${read} rows read`);
        }
      }
    }
    const memory = await memoryHistory(data.url);
    try {
      for (const level of MEMORY_LEVELS) {
        const total = await memory.grow(level);
        await sql`ANALYZE TABLE practice_question_memory`.execute(db);
        const now = new Date();
        await sql`FLUSH STATUS`.execute(db);
        const found = await findDueQuestions(db, MAIN_USER, memory.quizId, now, 20);
        const read = await rowsRead(db);
        const plan = await explain(
          db,
          dueMemoryQuery(db, MAIN_USER, memory.quizId, now, {
            take: 21,
            afterDueAt: undefined,
          }).compile(),
        );
        const nextPlan = await explain(
          db,
          nextDueQuery(db, MAIN_USER, memory.quizId, now).compile(),
        );
        due.push({ level: total, returned: found?.questions.length ?? 0, read, plan, nextPlan });
        log(`memory ${total}: ${read} rows read for ${found?.questions.length} due; ${plan}`);
      }
    } finally {
      await memory.close();
    }
  } finally {
    await close();
    await data.drop();
  }
  const lines = [
    "# Rows read by one ListSessions page (21 rows asked: a page of 20 and one more)",
    "",
    "| history | page | status | rows returned | rows read (Handler_read_*) |",
    "|---:|---|---|---:|---:|",
    ...rows.map((r) => `| ${r.level} | ${r.page} | ${r.status} | ${r.returned} | ${r.read} |`),
    "",
    "# Rows read by ListDueQuestions on a quiz of 10 questions (5 due), as the learner's memory grows",
    "",
    "| learner's memory rows | due returned | rows read (Handler_read_*, 3 statements) | EXPLAIN of the due read | EXPLAIN of the next due time |",
    "|---:|---:|---:|---|---|",
    ...due.map((r) => `| ${r.level} | ${r.returned} | ${r.read} | ${r.plan} | ${r.nextPlan} |`),
  ];
  writeReport("rows-read", lines.join("\n"), { sessions: rows, due });
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
