import { mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import {
  type CompiledQuery,
  type Driver,
  Kysely,
  MysqlDialect,
  type MysqlPoolConnection,
  type QueryResult,
} from "kysely";
import { createPool, type Pool, type PoolConnection, type PoolOptions } from "mysql2";
import type { PoolConnection as PromisePoolConnection } from "mysql2/promise";
import { allowWritesTogether } from "./answer-writes.js";
import { endsTransaction, signalOf } from "./cancel.js";
import type { Database } from "./database.js";
import { queryFormat } from "./query-format.js";
import { checkServing, checkServingOn } from "./serving-check.js";
import { openSqlite } from "./sqlite.js";
import { wrapConnections } from "./wrap-connections.js";

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
  const kills = killer(options);
  // Whether the server is a Galera node: unknown until a connection has said.
  let galera: boolean | undefined;
  pool.on("connection", (connection) => {
    limitSession(connection, timeoutMs);
    readCommittedWritesOnGalera(connection, (on) => {
      galera = galera === true || on;
    });
  });
  const db = new Kysely<Database>({
    dialect: new StoppableMysqlDialect(pool, timeoutMs, kills.kill),
  });
  // Not on Galera: there, a transaction aborted by a conflicting write in the
  // middle of a multi-statement request can report success (the cluster suite).
  allowWritesTogether(db, () => galera === false);
  // Opened on first use; its statements are bounded by the server-side limits.
  const opsPool = mysqlPool(options, 1);
  opsPool.on("connection", (connection) => limitSession(connection, timeoutMs));
  const opsDb = new Kysely<Database>({ dialect: new MysqlDialect({ pool: opsPool }) });
  const probe = probeConnection(options);
  return {
    db,
    store: "mysql",
    pool,
    opsDb,
    probe: probe.run,
    close: async () => {
      await Promise.all([probe.close(), kills.close(), opsDb.destroy(), db.destroy()]);
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

/**
 * Every connection the service opens comes from a pool like this one, even a
 * single one (probe, KILLs, set-up): mysql2's packet handling then sees one
 * class of connection and stays fast (its property reads turn generic, and
 * slower, on every statement once they have seen five shapes of connection).
 */
function mysqlPool(
  options: Pick<DatabaseOptions, "url" | "connectTimeoutMs">,
  connectionLimit: number,
  multipleStatements = false,
): Pool {
  return createPool({
    ...NO_STATEMENT_CACHE,
    // mysql2 types it as returning nothing; it uses the text returned.
    queryFormat: queryFormat as unknown as PoolOptions["queryFormat"],
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

/**
 * One connection of its own, outside the users' pool: opened on first use,
 * and again after a failure, which drops it (a hung statement never holds
 * up the next one).
 */
function keptConnection(options: Pick<DatabaseOptions, "url" | "connectTimeoutMs">) {
  const pool = mysqlPool(options, 1);
  return {
    async use<T>(work: (connection: PromisePoolConnection) => Promise<T>): Promise<T> {
      const connection = await pool.promise().getConnection();
      try {
        const result = await work(connection);
        connection.release();
        return result;
      } catch (err) {
        connection.destroy();
        throw err;
      }
    },
    close: () => pool.promise().end(),
  };
}

/** Longest a health probe's statement may take on its connection. */
const PROBE_QUERY_TIMEOUT_MS = 1000;

/** `checkServing` on a kept connection. */
function probeConnection(options: DatabaseOptions) {
  const kept = keptConnection(options);
  return {
    run: () =>
      kept.use((connection) =>
        checkServing(async (statement) => {
          const [rows] = await connection.query({
            sql: statement,
            timeout: PROBE_QUERY_TIMEOUT_MS,
          });
          return rows as Record<string, unknown>[];
        }, "mysql"),
      ),
    close: kept.close,
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
 * the server has done it.
 */
function killer(options: DatabaseOptions) {
  const kept = keptConnection(options);
  return {
    kill: (statement: string): Promise<void> =>
      kept.use(async (connection) => {
        await connection.query({ sql: statement, timeout: KILL_TIMEOUT_MS });
      }),
    close: kept.close,
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
 * Kysely's MySQL dialect on `pool`, each statement stopped as `stoppableConnection`
 * says. Kysely sends a statement to its connection synchronously, so the
 * signal of the statement being sent is handed over in `sending`.
 */
class StoppableMysqlDialect extends MysqlDialect {
  constructor(pool: Pool, timeoutMs: number, kill: (statement: string) => Promise<void>) {
    const adapters = new WeakMap<PoolConnection, MysqlPoolConnection>();
    const adapted = (connection: PoolConnection) => {
      let adapter = adapters.get(connection);
      if (adapter === undefined) {
        adapter = stoppableConnection(connection, timeoutMs, kill);
        adapters.set(connection, adapter);
      }
      return adapter;
    };
    super({
      pool: {
        getConnection: (callback) =>
          pool.getConnection((err, connection) =>
            callback(err, err ? connection : adapted(connection)),
          ),
        end: (callback) => pool.end(callback),
      },
    });
  }

  override createDriver(): Driver {
    return wrapConnections(super.createDriver(), (connection) => ({
      executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
        sending = signalOf(query);
        try {
          return connection.executeQuery<R>(query);
        } finally {
          sending = undefined;
        }
      },
      streamQuery: (query, chunkSize) => connection.streamQuery(query, chunkSize),
    }));
  }
}

/** The signal of the statement Kysely is sending now (see StoppableMysqlDialect). */
let sending: AbortSignal | undefined;

/**
 * `connection` as Kysely uses it, its callback-style `query` ended early. When
 * the call it runs for is stopped (its signal aborts: cancel.ts), with the
 * signal's reason: the statement is stopped with `KILL QUERY` and answered
 * once it has returned and the KILL is done, so the connection goes back to
 * its transaction's rollback and then to the pool, and no KILL can reach a
 * later statement; a statement not yet sent is not sent. After `timeoutMs`,
 * or if the KILL QUERY fails, with a fatal error answered as `unavailable`:
 * the connection is destroyed and its server session killed, so its
 * transaction rolls back and its locks go at once (mysql2's own `timeout`
 * cannot be passed through Kysely).
 */
function stoppableConnection(
  connection: PoolConnection,
  timeoutMs: number,
  kill: (statement: string) => Promise<void>,
): MysqlPoolConnection {
  // Once destroyed here, mysql2 never answers the commands queued on the
  // connection (its rollback, say): they fail at once instead.
  let destroyed: unknown;
  const query = (sql: string, parameters: unknown[], callback?: QueryCallback) => {
    const signal = sending;
    sending = undefined;
    if (callback === undefined) return connection.query(sql, parameters);
    if (destroyed !== undefined) {
      process.nextTick(callback, destroyed);
      return undefined;
    }
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
      callback(err, undefined as never);
    };
    // Stopped: answered with the signal's reason once the statement has
    // returned (`returned`) and the KILL QUERY is done (`killed`).
    let returned = false;
    let killed = false;
    const stopped = () => {
      if (returned && killed && settle()) callback(signal?.reason, undefined as never);
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
    connection.query(sql, parameters, (err, result) => {
      if (stoppable && signal.aborted) {
        returned = true;
        return stopped();
      }
      if (settle()) callback(err, result as never);
    });
    return undefined;
  };
  return { query: query as MysqlPoolConnection["query"], release: () => connection.release() };
}

type QueryCallback = Parameters<MysqlPoolConnection["query"]>[2];

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
  const pool = mysqlPool({ url: server.toString(), connectTimeoutMs }, 1).promise();
  try {
    // Look first: a service account may use its database without the right to create one.
    const [rows] = await pool.query(
      "SELECT 1 FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?",
      [name],
    );
    if ((rows as unknown[]).length > 0) return;
    await pool.query(
      `CREATE DATABASE IF NOT EXISTS \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`,
    );
  } finally {
    await pool.end();
  }
}

/** Drops the URL's MySQL database: for tests (an in-memory SQLite one goes with its handle). */
export async function dropDatabase(url: string): Promise<void> {
  if (storeOf(url) === "sqlite") return;
  const name = databaseName(url);
  const server = new URL(url);
  server.pathname = "/";
  const pool = mysqlPool({ url: server.toString(), connectTimeoutMs: 10_000 }, 1).promise();
  try {
    await pool.query(`DROP DATABASE IF EXISTS \`${name}\``);
  } finally {
    await pool.end();
  }
}
