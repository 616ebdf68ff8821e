/**
 * Rows read by the list query (findSessionPage) on a large history.
 *
 * Makes a fresh database with 100,000 sessions of one user on one quiz (plus
 * 20,000 background rows), runs first and deep pages with each status filter,
 * and reports MariaDB's Handler_read_* counters for each, next to the key
 * EXPLAIN chooses. Also runs the row-value keyset form `(started_at, id) < (?, ?)`
 * by hand, for contrast. Drops the database at the end.
 *
 *   npx tsx bench/list-rows-read.ts
 */
import { CompiledQuery, Kysely, MysqlDialect, sql } from "kysely";
import { openDatabase } from "../src/db/connect.js";
import type { Database, Db, NewPracticeSession } from "../src/db/database.js";
import { findSessionPage } from "../src/db/session-page.js";
import type { Cursor } from "../src/domain/cursor.js";
import type { SessionStatus } from "../src/domain/session.js";
import { createTestDatabase } from "../test/support/database.js";
import { insertQuiz } from "../test/support/fixtures.js";

const MAIN_USER = "bench-main-user";
const MAIN_ROWS = 100_000;
/** Sessions that share one started_at millisecond. */
const GROUP = 10;
const TAKE = 21;
/** Newest-first position of the deep page's cursor (mid-group, so the id tie-break matters). */
const DEEP_OFFSET = 49_995;
const BATCH = 5_000;
const BASE_MS = Date.UTC(2025, 0, 1);
const MINUTE = 60_000;

interface ExplainRow {
  id: number | null;
  select_type: string;
  table: string | null;
  type: string | null;
  possible_keys: string | null;
  key: string | null;
  key_len: string | null;
  ref: string | null;
  rows: string | number | null;
  Extra: string | null;
}

interface Measurement {
  label: string;
  rowsReturned: number;
  handlerRead: Map<string, number>;
  explain: ExplainRow[];
}

/** A UUIDv7-shaped id: 48-bit millisecond time, then a global sequence, so ids sort by time. */
function uuidV7Like(ms: number, seq: number): string {
  const t = ms.toString(16).padStart(12, "0");
  const p = seq.toString(16).padStart(18, "0");
  return `${t.slice(0, 8)}-${t.slice(8, 12)}-7${p.slice(0, 3)}-8${p.slice(3, 6)}-${p.slice(6, 18)}`;
}

interface PlannedRow {
  ms: number;
  userId: string;
  quizId: string;
  completed: boolean;
}

/**
 * The history: the main user's 100,000 sessions on quiz A in groups of 10 per
 * millisecond, one minute apart, all completed but the newest (one_active_session
 * allows one in progress per user and quiz); 5,000 of the main user's sessions
 * on quiz B; 15,000 single sessions of other users on both quizzes, one in three
 * completed. Ids are assigned in time order.
 */
function planRows(quizA: string, quizB: string): NewPracticeSession[] {
  const planned: PlannedRow[] = [];
  for (let i = 0; i < MAIN_ROWS; i++) {
    const ms = BASE_MS + Math.floor(i / GROUP) * MINUTE;
    planned.push({ ms, userId: MAIN_USER, quizId: quizA, completed: i < MAIN_ROWS - 1 });
  }
  const otherRows = 5_000;
  for (let i = 0; i < otherRows; i++) {
    const ms = BASE_MS + 17 + i * 2 * MINUTE;
    planned.push({ ms, userId: MAIN_USER, quizId: quizB, completed: i < otherRows - 1 });
  }
  for (let i = 0; i < 15_000; i++) {
    const ms = BASE_MS + 31 + (i % 10_000) * MINUTE;
    planned.push({
      ms,
      userId: `bench-user-${i}`,
      quizId: i % 3 === 2 ? quizB : quizA,
      completed: i % 3 === 0,
    });
  }
  planned.sort((a, b) => a.ms - b.ms);
  return planned.map((r, seq) => ({
    id: uuidV7Like(r.ms, seq),
    user_id: r.userId,
    quiz_id: r.quizId,
    started_at: new Date(r.ms),
    completed_at: r.completed ? new Date(r.ms + 5 * MINUTE) : null,
    total_questions: 3,
    correct_answers: 2,
  }));
}

async function handlerRead(db: Db): Promise<Map<string, number>> {
  const { rows } = await sql<{
    Variable_name: string;
    Value: string;
  }>`SHOW SESSION STATUS LIKE 'Handler_read%'`.execute(db);
  return new Map(rows.map((r) => [r.Variable_name, Number(r.Value)]));
}

function sum(counters: Map<string, number>): number {
  let total = 0;
  for (const v of counters.values()) total += v;
  return total;
}

async function connectionId(db: Db): Promise<string> {
  const { rows } = await sql<{ id: string }>`SELECT CONNECTION_ID() AS id`.execute(db);
  return String(rows[0]?.id);
}

async function explain(db: Db, query: CompiledQuery): Promise<ExplainRow[]> {
  const result = await db.executeQuery<ExplainRow>(
    CompiledQuery.raw(`EXPLAIN ${query.sql}`, [...query.parameters]),
  );
  return result.rows;
}

async function main(): Promise<void> {
  const testDb = await createTestDatabase("mysql");
  // One connection, so FLUSH STATUS, the query and SHOW SESSION STATUS share a session.
  const handle = openDatabase({ url: testDb.url, poolSize: 1, connectTimeoutMs: 3000 });
  let lastQuery: CompiledQuery | undefined;
  const db: Db = new Kysely<Database>({
    dialect: new MysqlDialect({ pool: handle.pool as NonNullable<typeof handle.pool> }),
    log(event) {
      if (event.level === "query") lastQuery = event.query;
    },
  });
  try {
    const quizA = await insertQuiz(testDb.db);
    const quizB = await insertQuiz(testDb.db);
    const rows = planRows(quizA.quizId, quizB.quizId);
    const started = performance.now();
    for (let i = 0; i < rows.length; i += BATCH) {
      await testDb.db
        .insertInto("practice_sessions")
        .values(rows.slice(i, i + BATCH))
        .execute();
    }
    await sql`ANALYZE TABLE practice_sessions`.execute(testDb.db);
    console.log(
      `inserted ${rows.length} sessions in ${((performance.now() - started) / 1000).toFixed(1)} s`,
    );

    const { rows: cursorRows } = await sql<{ started_at: Date; id: string }>`
      SELECT started_at, id FROM practice_sessions
      WHERE user_id = ${MAIN_USER} AND quiz_id = ${quizA.quizId}
      ORDER BY started_at DESC, id DESC LIMIT 1 OFFSET ${DEEP_OFFSET}`.execute(db);
    const cursorRow = cursorRows[0];
    if (cursorRow === undefined) throw new Error("no cursor row");
    const cursor: Cursor = { startedAt: cursorRow.started_at, id: cursorRow.id };
    console.log(
      `deep cursor (row ${DEEP_OFFSET + 1} newest first): ${cursor.startedAt.toISOString()} ${cursor.id}`,
    );

    const measurements: Measurement[] = [];
    await db.connection().execute(async (conn) => {
      const connId = await connectionId(conn);
      await sql`FLUSH STATUS`.execute(conn);
      const baseline = sum(await handlerRead(conn));
      console.log(`Handler_read sum of FLUSH STATUS + SHOW STATUS alone: ${baseline}`);

      /** FLUSH STATUS; run; SHOW SESSION STATUS, all on `conn`. */
      async function measure(
        label: string,
        run: () => Promise<{ count: number; query: CompiledQuery }>,
      ): Promise<void> {
        await sql`FLUSH STATUS`.execute(conn);
        const { count, query } = await run();
        const counters = await handlerRead(conn);
        const plan = await explain(conn, query);
        measurements.push({ label, rowsReturned: count, handlerRead: counters, explain: plan });
      }

      const statuses: (SessionStatus | undefined)[] = [undefined, "active", "completed"];
      const pages: [string, Cursor | undefined][] = [
        ["first page", undefined],
        ["deep page", cursor],
      ];
      /** One unmeasured run, so table opening and statistics loading are not counted. */
      async function warmUp(printSql: boolean): Promise<void> {
        const page = await findSessionPage(conn, {
          userId: MAIN_USER,
          quizId: quizA.quizId,
          status: undefined,
          take: TAKE,
          after: cursor,
        });
        if (printSql && lastQuery !== undefined)
          console.log(`findSessionPage SQL (deep page, any): ${lastQuery.sql}`);
        if (page?.length !== TAKE) throw new Error(`warm-up read ${page?.length} rows`);
      }
      async function measureFindSessionPage(suffix: string): Promise<void> {
        for (const [pageLabel, after] of pages) {
          for (const status of statuses) {
            const label = `findSessionPage ${pageLabel}, status ${status ?? "any"}${suffix}`;
            await measure(label, async () => {
              lastQuery = undefined;
              const page = await findSessionPage(conn, {
                userId: MAIN_USER,
                quizId: quizA.quizId,
                status,
                take: TAKE,
                after,
              });
              if (lastQuery === undefined) throw new Error("query was not logged");
              return { count: page?.length ?? 0, query: lastQuery };
            });
          }
        }
      }
      await warmUp(true);
      await measureFindSessionPage("");

      /** The deep page by hand, without the live-quiz wrapper. */
      const rawDeepPage = (
        keyset: "row-value" | "expanded",
        hint: boolean,
        completedOnly: boolean,
      ) =>
        sql<{ id: string }>`
          SELECT id, quiz_id, started_at, completed_at, total_questions, correct_answers
          FROM practice_sessions ${hint ? sql`FORCE INDEX (sessions_by_start)` : sql``}
          WHERE user_id = ${MAIN_USER} AND quiz_id = ${quizA.quizId}
            ${completedOnly ? sql`AND completed_at IS NOT NULL` : sql``}
            AND ${
              keyset === "row-value"
                ? sql`(started_at, id) < (${cursor.startedAt}, ${cursor.id})`
                : sql`started_at <= ${cursor.startedAt}
                    AND (started_at < ${cursor.startedAt} OR id < ${cursor.id})`
            }
          ORDER BY started_at DESC, id DESC LIMIT ${TAKE}`;
      const rawCases: [string, "row-value" | "expanded", boolean][] = [
        ["raw row-value deep page", "row-value", false],
        ["raw expanded deep page", "expanded", false],
        ["raw expanded deep page + FORCE INDEX", "expanded", true],
      ];
      for (const [label, keyset, hint] of rawCases) {
        for (const completedOnly of [false, true]) {
          const query = rawDeepPage(keyset, hint, completedOnly);
          await measure(`${label}, status ${completedOnly ? "completed" : "any"}`, async () => {
            const result = await query.execute(conn);
            return { count: result.rows.length, query: query.compile(conn) };
          });
        }
      }

      // The deep page must be the 21 rows after the cursor in list order.
      const { rows: expected } = await sql<{ id: string }>`
        SELECT id FROM practice_sessions WHERE user_id = ${MAIN_USER} AND quiz_id = ${quizA.quizId}
        ORDER BY started_at DESC, id DESC LIMIT ${TAKE} OFFSET ${DEEP_OFFSET + 1}`.execute(conn);
      const deep = await findSessionPage(conn, {
        userId: MAIN_USER,
        quizId: quizA.quizId,
        status: undefined,
        take: TAKE,
        after: cursor,
      });
      const same =
        JSON.stringify(deep?.map((r) => r.id)) === JSON.stringify(expected.map((r) => r.id));
      console.log(`deep page matches OFFSET ${DEEP_OFFSET + 1}: ${same}`);

      if ((await connectionId(conn)) !== connId) throw new Error("connection changed");
      console.log(`all statements on connection ${connId}`);
    });

    console.log("\n| case | rows returned | Handler_read sum | key used (from EXPLAIN) |");
    console.log("|---|---:|---:|---|");
    for (const m of measurements) {
      const keys = m.explain
        .filter((r) => r.table === "practice_sessions" || r.select_type === "DERIVED")
        .map((r) => `${r.key ?? "none"} (${r.type ?? r.Extra})`)
        .join(", ");
      console.log(`| ${m.label} | ${m.rowsReturned} | ${sum(m.handlerRead)} | ${keys} |`);
    }
    for (const m of measurements) {
      console.log(`\n${m.label}`);
      const nonzero = [...m.handlerRead].filter(([, v]) => v > 0).map(([k, v]) => `${k}=${v}`);
      console.log(`  ${nonzero.join(" ")}`);
      for (const r of m.explain) {
        console.log(
          `  EXPLAIN id=${r.id} ${r.select_type} table=${r.table} type=${r.type} possible_keys=${r.possible_keys} key=${r.key} key_len=${r.key_len} ref=${r.ref} rows=${r.rows} Extra=${r.Extra}`,
        );
      }
    }
  } finally {
    await db.destroy();
    await testDb.drop();
  }
}

await main();
