/**
 * `npm run bench:rows`: rows MariaDB reads for one page of ListSessions
 * (the service's own statement, src/db/session-page.ts), first page and a
 * page from the middle of the history, at each history size, from the
 * session's Handler_read_* counters. A keyset page reads about the page,
 * however deep: the counts should not grow with the history.
 *
 * BENCH_QUICK=1: histories of 10 and 1,000 only.
 */
import { sql } from "kysely";
import { openDatabase } from "../src/db/connect.js";
import { findSessionPage } from "../src/db/session-page.js";
import { decodeCursor } from "../src/domain/cursor.js";
import type { SessionStatus } from "../src/domain/session.js";
import { log } from "./lib/children.js";
import { generate, MAIN_USER } from "./lib/data.js";
import { writeReport } from "./lib/report.js";

const QUICK = process.env.BENCH_QUICK === "1";
const SERVER_URL = process.env.BENCH_DATABASE_URL ?? "mysql://root@127.0.0.1:3306/";
const LEVELS = QUICK ? [10, 1000] : [10, 1000, 100_000];
const TAKE = 21;

async function main() {
  const data = await generate(SERVER_URL, LEVELS);
  // One connection: the session counters are this connection's.
  const { db, close } = openDatabase({ url: data.url, poolSize: 1, connectTimeoutMs: 5000 });
  const rows: Record<string, number | string>[] = [];
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
          const counters = await sql<{
            Variable_name: string;
            Value: string;
          }>`SHOW SESSION STATUS LIKE 'Handler_read%'`.execute(db);
          const read = counters.rows.reduce((n, r) => n + Number(r.Value), 0);
          rows.push({ level, page, status: status ?? "any", returned: found?.length ?? 0, read });
          log(`${level} ${page} ${status ?? "any"}: ${read} rows read`);
        }
      }
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
  ];
  writeReport("rows-read", lines.join("\n"), rows);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
