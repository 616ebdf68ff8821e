import { mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { Kysely, MysqlDialect } from "kysely";
import {
  type Connection,
  createConnection,
  createPool,
  type Pool,
  type PoolConnection,
} from "mysql2";
import { allowWritesTogether } from "./answer-writes.js";
import { endsTransaction, statementSignal } from "./cancel.js";
import type { Database } from "./database.js";
import { checkServing, checkServingOn } from "./serving-check.js";
import { openSqlite } from "./sqlite.js";

/** Which database a DATABASE_URL names: `mysql://…` or `sqlite:PATH` / `sqlite::memory:`. */
export type Store = "mysql" | "sqlite";

export function storeOf(url: string): Store {
  return url.startsWith("sqlite:") ? "sqlite" : "mysql";
}

/**
 * The store a URL names, for people: `SQLite /abs/path/practice.db` or
 * `MySQL host:port/db`, never the password.
 */
export function describeStore(url: string): string {
  if (storeOf(url) === "sqlite") {
    const file = sqliteFile(url);
    return `SQLite ${file === ":memory:" ? file : resolve(file)}`;
  }
  const parsed = new URL(url);
  return `MySQL ${parsed.host}${parsed.pathname}`;
}

/** The file of a `sqlite:` URL, or ":memory:". */
function sqliteFile(url: string): string {
  return url.slice("sqlite:".length);
}

export interface DatabaseOptions {
  url: string;
  poolSize: number;
  connectTimeoutMs: number;
  /** Longest a statement may run before its connection is dropped (default QUERY_TIMEOUT_MS). */
  queryTimeoutMs?: number;
}

/**
 * A statement unanswered this long means the database hangs: its connection
 * is destroyed and the caller gets `unavailable`.
 */
export const QUERY_TIMEOUT_MS = 5000;

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
    const db = openSqlite(sqliteFile(options.url));
    const probe = () => checkServingOn(db);
    return { db, store: "sqlite", opsDb: db, probe, close: () => db.destroy() };
  }
  return openMysql(options);
}

/** A MySQL pool; times in UTC and BIGINTs as strings, so no time zone or precision leaks in. */
function openMysql(options: DatabaseOptions): DatabaseHandle {
  // Multiple statements: an answer's writes go in one request (answer-writes.ts).
  const pool = mysqlPool(options, options.poolSize, true);
  const timeoutMs = options.queryTimeoutMs ?? QUERY_TIMEOUT_MS;
  const kills = killer(options.url, options.connectTimeoutMs);
  // Whether the server is a Galera node: unknown until a connection has said.
  let galera: boolean | undefined;
  pool.on("connection", (connection) => {
    // Set-up statements first, on the raw connection: the pool may open it in
    // the async context of a call that has already ended, and they must run whatever.
    limitSession(connection, timeoutMs);
    readCommittedWritesOnGalera(connection, (on) => {
      galera = galera === true || on;
    });
    limitQueryTime(connection, timeoutMs, kills.kill);
  });
  const db = new Kysely<Database>({ dialect: new MysqlDialect({ pool }) });
  // Not on Galera: there, a transaction aborted by a conflicting write in the
  // middle of a multi-statement request can report success (the cluster suite).
  allowWritesTogether(db, () => galera === false);
  // Opened on first use; its statements are bounded by the server-side limits.
  const opsPool = mysqlPool(options, 1);
  opsPool.on("connection", (connection) => limitSession(connection, timeoutMs));
  const opsDb = new Kysely<Database>({ dialect: new MysqlDialect({ pool: opsPool }) });
  const probe = probeConnection(options.url, options.connectTimeoutMs);
  return {
    db,
    store: "mysql",
    pool,
    opsDb,
    probe: probe.run,
    close: async () => {
      probe.close();
      kills.close();
      await opsDb.destroy();
      await db.destroy();
    },
  };
}

/**
 * mysql2 sizes each connection's prepared-statement cache up front (16,000
 * slots by default: about 2 ms of CPU per connection opened here). Kysely
 * runs text queries and prepares nothing, and connections are opened again
 * after each statement stopped for a caller who left, and for each KILL.
 */
const NO_STATEMENT_CACHE = { maxPreparedStatements: 1 };

function mysqlPool(
  options: DatabaseOptions,
  connectionLimit: number,
  multipleStatements = false,
): Pool {
  return createPool({
    ...NO_STATEMENT_CACHE,
    multipleStatements,
    uri: options.url,
    connectionLimit,
    connectTimeout: options.connectTimeoutMs,
    timezone: "Z",
    supportBigNumbers: true,
    bigNumberStrings: true,
    enableKeepAlive: true,
    // Fail fast rather than queue without bound when the database is slow.
    queueLimit: connectionLimit * 100,
  });
}

/** Longest a health probe's statement may take on its connection. */
const PROBE_QUERY_TIMEOUT_MS = 1000;

/**
 * One connection of its own, outside the pool: opened on first use, and
 * again after it is dropped (as it is on its own error).
 */
function keptConnection(url: string, connectTimeoutMs: number) {
  let connection: Connection | undefined;
  const kept = {
    get(): Connection {
      if (connection === undefined) {
        const opened = createConnection({
          ...NO_STATEMENT_CACHE,
          uri: url,
          connectTimeout: connectTimeoutMs,
        });
        opened.on("error", () => kept.drop(opened));
        connection = opened;
      }
      return connection;
    },
    /** Destroys `which` (default: the current one); a later one is kept. */
    drop(which = connection): void {
      which?.destroy();
      if (which === connection) connection = undefined;
    },
  };
  return kept;
}

/** `checkServing` on a kept connection; a failure drops it. */
function probeConnection(url: string, connectTimeoutMs: number) {
  const kept = keptConnection(url, connectTimeoutMs);
  return {
    run: async () => {
      const connection = kept.get();
      try {
        // A hung probe fails and drops its connection instead of holding up the next one.
        const promise = connection.promise();
        await checkServing(async (statement) => {
          const [rows] = await promise.query({ sql: statement, timeout: PROBE_QUERY_TIMEOUT_MS });
          return rows as Record<string, unknown>[];
        }, "mysql");
      } catch (err) {
        kept.drop(connection);
        throw err;
      }
    },
    close: () => kept.drop(),
  };
}

/**
 * Server-side limits so no connection holds locks for long: lock waits fail
 * (errno 1205, retried) before our own timeout; a session idle in a transaction
 * (a client cut off by a partition) is killed after twice the limit; the server
 * stops overlong statements. Unknown variables (MySQL vs MariaDB) are skipped.
 */
function limitSession(connection: PoolConnection, timeoutMs: number): void {
  const seconds = Math.max(1, Math.ceil(timeoutMs / 1000));
  const lockWait = Math.max(1, Math.floor(timeoutMs / 2000));
  const ignore = () => {};
  connection.query(`SET SESSION innodb_lock_wait_timeout = ${lockWait}`, ignore);
  connection.query(
    `SET SESSION idle_transaction_timeout = ${2 * seconds}, max_statement_time = ${timeoutMs / 1000}`,
    ignore,
  );
  connection.query(`SET SESSION max_execution_time = ${timeoutMs}`, ignore);
}

/**
 * Sends `KILL` statements (`KILL QUERY <id>`, `KILL <id>`) on a kept
 * connection: a stopped statement costs no new connection. Resolves once
 * the server has done it; a failure drops the connection.
 */
function killer(url: string, connectTimeoutMs: number) {
  const kept = keptConnection(url, connectTimeoutMs);
  return {
    kill(statement: string): Promise<void> {
      const connection = kept.get();
      return new Promise((resolve, reject) => {
        connection.query({ sql: statement, timeout: KILL_TIMEOUT_MS }, (err) => {
          if (err === null) return resolve();
          kept.drop(connection);
          reject(err);
        });
      });
    },
    close: () => kept.drop(),
  };
}

/** Longest a KILL may take before the statement it stops is cut off with its connection. */
const KILL_TIMEOUT_MS = 1000;

/**
 * On Galera, reads wait until the node has applied every write committed
 * cluster-wide (`wsrep_sync_wait = 1`), so a session started through one node
 * is found through another right after. Harmless elsewhere. Tells `seen`
 * whether the server is a Galera node.
 */
function readCommittedWritesOnGalera(
  connection: PoolConnection,
  seen: (galera: boolean) => void,
): void {
  connection.query("SET SESSION wsrep_sync_wait = IF(@@wsrep_on, 1, 0)", () => {});
  // MySQL has no wsrep_on: not Galera.
  connection.query("SELECT @@wsrep_on AS galera", (err: unknown, rows: unknown) => {
    seen(err === null && Number((rows as { galera?: unknown }[])[0]?.galera) === 1);
  });
}

/**
 * Ends a callback-style `query` (Kysely's form) early. When the call it runs
 * for is stopped (its signal aborts: cancel.ts), with the signal's reason:
 * the statement is stopped with `KILL QUERY` and answered once it has
 * returned and the KILL is done, so the connection goes back to its
 * transaction's rollback and then to the pool, and no KILL can reach a later
 * statement; a statement not yet sent is not sent. After `timeoutMs`, or if
 * the KILL QUERY fails, with a fatal error answered as `unavailable`: the
 * connection is destroyed and its server session killed, so its
 * transaction rolls back and its locks go at once (mysql2's own `timeout`
 * cannot be passed through Kysely).
 */
function limitQueryTime(
  connection: PoolConnection,
  timeoutMs: number,
  kill: (statement: string) => Promise<void>,
): void {
  const query = connection.query.bind(connection) as (...args: unknown[]) => unknown;
  // Once destroyed here, mysql2 never answers the commands queued on the
  // connection (its rollback, say): they fail at once instead.
  let destroyed: unknown;
  connection.query = ((...args: unknown[]) => {
    const callback = args.at(-1);
    if (typeof callback !== "function") return query(...args);
    if (destroyed !== undefined) {
      process.nextTick(callback, destroyed);
      return undefined;
    }
    const signal = statementSignal();
    const sql = typeof args[0] === "string" ? args[0] : String((args[0] as { sql?: string })?.sql);
    const stoppable = signal !== undefined && !endsTransaction(sql);
    if (stoppable && signal.aborted) {
      process.nextTick(callback, signal.reason);
      return undefined;
    }
    let settled = false;
    const settle = () => {
      if (settled) return false;
      settled = true;
      clearTimeout(timer);
      if (stoppable) signal.removeEventListener("abort", onAbort);
      return true;
    };
    const cutOff = (err: unknown) => {
      if (!settle()) return;
      const threadId = connection.threadId;
      destroyed = Object.assign(new Error("the connection was closed: its statement was stopped"), {
        code: "PROTOCOL_CONNECTION_LOST",
        fatal: true,
      });
      connection.destroy();
      if (threadId !== null && threadId !== undefined)
        kill(`KILL ${Number(threadId)}`).catch(() => {});
      callback(err);
    };
    // Stopped: answered with the signal's reason once the statement has
    // returned (`returned`) and the KILL QUERY is done (`killed`).
    let returned = false;
    let killed = false;
    const stopped = () => {
      if (returned && killed && settle()) callback(signal?.reason);
    };
    const onAbort = () => {
      const threadId = connection.threadId;
      if (threadId === null || threadId === undefined) return cutOff(signal?.reason);
      kill(`KILL QUERY ${Number(threadId)}`).then(
        () => {
          killed = true;
          stopped();
        },
        () => cutOff(signal?.reason),
      );
    };
    const timer = setTimeout(() => {
      cutOff(
        Object.assign(new Error(`query timed out after ${timeoutMs} ms`), {
          code: "PROTOCOL_SEQUENCE_TIMEOUT",
          fatal: true,
        }),
      );
    }, timeoutMs);
    if (stoppable) signal.addEventListener("abort", onAbort, { once: true });
    return query(...args.slice(0, -1), (...result: unknown[]) => {
      if (stoppable && signal.aborted) {
        returned = true;
        return stopped();
      }
      if (settle()) callback(...result);
    });
  }) as typeof connection.query;
}

/** The database name in a mysql:// URL. */
export function databaseName(url: string): string {
  const name = decodeURIComponent(new URL(url).pathname.slice(1));
  if (!/^[A-Za-z0-9_]{1,64}$/.test(name)) {
    throw new Error(`database name "${name}" must be 1-64 letters, digits or underscores`);
  }
  return name;
}

/**
 * Creates the URL's database if it is missing: the MySQL database (needs the
 * CREATE privilege), or the SQLite file's folder.
 */
export async function createDatabaseIfMissing(url: string, connectTimeoutMs = 5000): Promise<void> {
  if (storeOf(url) === "sqlite") {
    const file = sqliteFile(url);
    if (file !== ":memory:") mkdirSync(dirname(file), { recursive: true });
    return;
  }
  const name = databaseName(url);
  const server = new URL(url);
  server.pathname = "/";
  const connection = createConnection({ uri: server.toString(), connectTimeout: connectTimeoutMs });
  try {
    // Look first: a service account may use its database without the right to create one.
    const [rows] = await connection
      .promise()
      .query("SELECT 1 FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", [name]);
    if ((rows as unknown[]).length > 0) return;
    await connection
      .promise()
      .query(
        `CREATE DATABASE IF NOT EXISTS \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`,
      );
  } finally {
    connection.destroy();
  }
}

/** Drops the URL's MySQL database: for tests (an in-memory SQLite one goes with its handle). */
export async function dropDatabase(url: string): Promise<void> {
  if (storeOf(url) === "sqlite") return;
  const name = databaseName(url);
  const server = new URL(url);
  server.pathname = "/";
  const connection = createConnection({ uri: server.toString() });
  try {
    await connection.promise().query(`DROP DATABASE IF EXISTS \`${name}\``);
  } finally {
    connection.destroy();
  }
}
