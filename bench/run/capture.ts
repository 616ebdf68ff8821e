/**
 * The service's own SQL, captured once through Kysely's query log, so that
 * the raw mysql2 ceiling replays exactly the statements the service sends.
 */

import { Kysely, MysqlDialect } from "kysely";
import { createPool as createCallbackPool } from "mysql2";
import type { Pool } from "mysql2/promise";
import { v7 as uuidv7 } from "uuid";
import { PracticeSessions } from "../../src/app/practice-sessions.js";
import type { Database } from "../../src/db/database.js";
import { findLiveQuiz } from "../../src/db/quizzes-repository.js";
import { findSessionPage } from "../../src/db/session-page.js";
import { systemClock } from "../../src/domain/clock.js";
import { decodeCursor } from "../../src/domain/cursor.js";
import { type BenchData, MAIN_USER, RESUME_USER } from "../lib/data.js";
import { LEVELS } from "./settings.js";

/** Captured SQL of the service's statements, replayed by the raw mysql2 ceiling. */
export interface Captured {
  sql: string;
  parameters: unknown[];
}

/** The statements `run` sends through Kysely, in order. */
async function capture(
  url: string,
  run: (db: Kysely<Database>) => Promise<unknown>,
): Promise<Captured[]> {
  const queries: Captured[] = [];
  const pool = createCallbackPool({ uri: url, connectionLimit: 1, timezone: "Z" });
  const db = new Kysely<Database>({
    dialect: new MysqlDialect({ pool }),
    log(event) {
      if (event.level === "query") {
        queries.push({ sql: event.query.sql, parameters: [...event.query.parameters] });
      }
    },
  });
  try {
    await run(db);
  } finally {
    await db.destroy();
  }
  return queries;
}

/** The service's statements for each request, and replays of them on a pool. */
export interface ServiceSql {
  /** The list statement per `${level}/${deep}`. */
  listSql: Map<string, Captured>;
  quizSql: Captured;
  /** A resume: the start state, then the snapshot. */
  rawResume: (pool: Pool) => () => Promise<void>;
  /** The create path by hand: the service's statements, with BEGIN/COMMIT on one connection. */
  rawCreate: (pool: Pool, prefix: string) => (i: number) => Promise<void>;
}

/** Captures what the service sends for every request the bench measures. */
export async function captureServiceSql(data: BenchData): Promise<ServiceSql> {
  const listSql = new Map<string, Captured>();
  for (const level of LEVELS) {
    for (const deep of [false, true]) {
      const cursor = data.deepCursor.get(level) as string;
      const [q] = await capture(data.url, (db) =>
        findSessionPage(db, {
          userId: MAIN_USER,
          quizId: data.levelQuiz.get(level) as string,
          status: undefined,
          take: 21,
          after: deep ? decodeCursor(cursor) : undefined,
        }),
      );
      listSql.set(`${level}/${deep}`, q as Captured);
    }
  }
  // A resume is the start state, then the snapshot: both statements, in order.
  const resumeSql = await capture(data.url, (db) =>
    new PracticeSessions(db, systemClock).startSession(RESUME_USER, data.startQuiz),
  );
  if (resumeSql.length !== 2) throw new Error(`resume issued ${resumeSql.length} statements`);
  const rawResume = (pool: Pool) => async () => {
    for (const q of resumeSql) await pool.query(q.sql, q.parameters);
  };
  const [quizSql] = await capture(data.url, (db) => findLiveQuiz(db, data.startQuiz));
  const captureUser = "bench-capture-user";
  const captureId = "00000000-0000-7000-8000-000000000000";
  const createLog = await capture(data.url, (db) =>
    new PracticeSessions(db, systemClock, () => captureId).startSession(
      captureUser,
      data.startQuiz,
    ),
  );
  // Kysely also logs the transaction's own BEGIN and COMMIT: they say which of
  // the service's statements run before it (the start state) and which in it
  // (session, answers snapshot, its read, and the outbox event since the events
  // outbox), so that the replay follows the service as it changes.
  const verbs = createLog.map((q) => q.sql.trim().split(/\s/)[0]?.toLowerCase());
  const begin = verbs.indexOf("begin");
  const commit = verbs.indexOf("commit");
  const before = createLog.slice(0, Math.max(begin, 0));
  const inTransaction = createLog.slice(begin + 1, commit);
  if (begin !== 1 || commit !== createLog.length - 1 || inTransaction.length < 3) {
    throw new Error(`create issued ${createLog.map((q) => q.sql.slice(0, 30)).join(" | ")}`);
  }
  // The captured user, id and time stand for each request's own (inside the
  // event's JSON body too; its event id is no key, so it may repeat).
  const subst = (q: Captured, user: string, id: string, at: Date) =>
    q.parameters.map((p) =>
      p === captureUser
        ? user
        : p === captureId
          ? id
          : p instanceof Date
            ? at
            : typeof p === "string" && p.includes(captureId)
              ? p.replaceAll(captureId, id).replaceAll(captureUser, user)
              : p,
    );
  /** The create path by hand: the service's statements, in its transaction on one connection. */
  const rawCreate = (pool: Pool, prefix: string) => async (i: number) => {
    const user = `${prefix}-${i}`;
    const id = uuidv7();
    const at = new Date();
    for (const q of before) await pool.query(q.sql, subst(q, user, id, at));
    const conn = await pool.getConnection();
    try {
      await conn.query("BEGIN");
      for (const q of inTransaction) await conn.query(q.sql, subst(q, user, id, at));
      await conn.query("COMMIT");
    } finally {
      conn.release();
    }
  };
  return { listSql, quizSql: quizSql as Captured, rawResume, rawCreate };
}
