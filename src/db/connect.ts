import { Kysely } from "kysely";
import type { Pool, PoolConnection } from "mysql2";
import { allowWritesTogether } from "./answer-writes.js";
import type { Database } from "./database.js";
import { StatementKiller } from "./kill-statement.js";
import { mysqlPool, type PoolSettings } from "./mysql-pool.js";
import { prepareSession, type ServerSession, type SessionLimits } from "./mysql-session.js";
import { checkServing, checkServingOn } from "./serving-check.js";
import { openSqlite } from "./sqlite.js";
import { StoppableMysqlDialect } from "./stoppable-mysql.js";
import { type Store, sqliteFile, storeOf } from "./store-url.js";

export { createDatabaseIfMissing, dropDatabase } from "./create-database.js";
export { databaseName, describeStore, type Store, storeOf } from "./store-url.js";
export { unusableSessionIn } from "./unusable-session.js";

export interface DatabaseOptions {
  url: string;
  poolSize: number;
  connectTimeoutMs: number;
  /** Every statement's and session's limits, as edge/call-limits.ts works them out. */
  limits: DatabaseLimits;
}

/** The database's own limits (edge/call-limits.ts `databaseLimits` gives them). */
export interface DatabaseLimits extends SessionLimits {
  /** How long one SQLite statement waits out another process's lock. */
  sqliteLockWaitMs: number;
}

export interface DatabaseHandle {
  db: Kysely<Database>;
  store: Store;
  /** The mysql2 pool under Kysely, for pool metrics; none for SQLite. */
  pool?: Pool;
  /**
   * For the service's own reads (metrics): on MySQL a connection of its own,
   * so a scrape never waits behind users for the pool (SQLite: `db`).
   */
  opsDb: Kysely<Database>;
  /** Resolves if the database answers `SELECT 1`, on a connection outside the users' pool. */
  probe(): Promise<void>;
  close(): Promise<void>;
}

/** Opens the database `options.url` names. */
export function openDatabase(options: DatabaseOptions): DatabaseHandle {
  if (storeOf(options.url) === "sqlite") {
    const db = openSqlite(sqliteFile(options.url), options.limits.sqliteLockWaitMs);
    const probe = () => checkServingOn(db);
    return { db, store: "sqlite", opsDb: db, probe, close: () => db.destroy() };
  }
  return openMysql(options);
}

function openMysql(options: DatabaseOptions): DatabaseHandle {
  const pool = mysqlPool(options, options.poolSize);
  const killer = new StatementKiller(options);
  // Galera or not: unknown until a connection has said, and Galera once one has.
  let galera: boolean | undefined;
  const onSession = (session: ServerSession) => {
    galera = galera === true || session.galera;
  };
  // What every pool shares: statement limits, set-up budget, KILLs.
  const stopping = { limits: options.limits, setupMs: options.connectTimeoutMs, killer };
  const db = new Kysely<Database>({
    dialect: new StoppableMysqlDialect(pool, { ...stopping, onSession }),
  });
  // Answers' transactions on connections of their own, the only ones that take several
  // statements in one request (answer-writes.ts); every value is a literal no sql_mode
  // misreads (inline-values.ts). Opened as answers need them, as many as the users' pool.
  const answersPool = mysqlPool(options, options.poolSize, true);
  const answersDb = new Kysely<Database>({
    dialect: new StoppableMysqlDialect(answersPool, { ...stopping, onSession }),
  });
  // Not on Galera, nor before it is known: there, a transaction aborted by a
  // conflicting write in the middle of a multi-statement request can report
  // success (the cluster suite).
  allowWritesTogether(db, answersDb, () => galera === false);
  // Opened on first use; its statements are bounded by the server-side limits.
  const opsPool = mysqlPool(options, 1);
  const opsDb = new Kysely<Database>({
    dialect: new StoppableMysqlDialect(opsPool, stopping),
  });
  const probe = probeConnection(options);
  return {
    db,
    store: "mysql",
    pool,
    opsDb,
    probe: probe.run,
    close: async () => {
      await Promise.all([probe.close(), opsDb.destroy(), answersDb.destroy(), db.destroy()]);
      await killer.close();
    },
  };
}

/** Longest a health probe's statement may take on its connection. */
const PROBE_QUERY_TIMEOUT_MS = 1000;

/**
 * `checkServing` on a connection of its own, outside the users' pool: opened
 * on first use, and again after a failure, which drops it (a hung statement
 * never holds up the next one).
 */
function probeConnection(settings: PoolSettings) {
  const pool = mysqlPool(settings, 1);
  const ready = new WeakSet<PoolConnection>();
  const run = async () => {
    const connection = await new Promise<PoolConnection>((resolve, reject) =>
      pool.getConnection((err, c) => (err ? reject(err) : resolve(c))),
    );
    try {
      if (!ready.has(connection)) {
        await prepareSession(connection, settings.connectTimeoutMs);
        ready.add(connection);
      }
      await checkServing(
        (statement) =>
          new Promise((resolve, reject) =>
            connection.query({ sql: statement, timeout: PROBE_QUERY_TIMEOUT_MS }, (err, rows) =>
              err ? reject(err) : resolve(rows as Record<string, unknown>[]),
            ),
          ),
        "mysql",
      );
      connection.release();
    } catch (err) {
      connection.destroy();
      throw err;
    }
  };
  return { run, close: () => new Promise<void>((resolve) => pool.end(() => resolve())) };
}
