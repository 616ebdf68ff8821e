import { mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { Kysely, MysqlDialect } from "kysely";
import { createConnection, createPool, type Pool, type PoolConnection } from "mysql2";
import type { Database } from "./database.js";
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
 * Statements here take milliseconds. One still unanswered after this long
 * means the database hangs (a partition, a stalled server): its connection is
 * destroyed and the caller gets `unavailable` instead of waiting with it.
 */
export const QUERY_TIMEOUT_MS = 5000;

export interface DatabaseHandle {
  db: Kysely<Database>;
  store: Store;
  /** The mysql2 pool under Kysely, for pool metrics; none for SQLite. */
  pool?: Pool;
  close(): Promise<void>;
}

/** Opens the database `options.url` names. */
export function openDatabase(options: DatabaseOptions): DatabaseHandle {
  if (storeOf(options.url) === "sqlite") {
    const db = openSqlite(sqliteFile(options.url));
    return { db, store: "sqlite", close: () => db.destroy() };
  }
  return openMysql(options);
}

/**
 * Opens a MySQL pool on `options.url`. Times are read and written in UTC
 * (`timezone: "Z"`), BIGINTs as strings, so nothing depends on the server's
 * or the process's time zone and no id loses precision.
 */
function openMysql(options: DatabaseOptions): DatabaseHandle {
  const pool = createPool({
    uri: options.url,
    connectionLimit: options.poolSize,
    connectTimeout: options.connectTimeoutMs,
    timezone: "Z",
    supportBigNumbers: true,
    bigNumberStrings: true,
    enableKeepAlive: true,
    // Many requests can wait for one of few connections; fail fast rather than
    // queue without bound when the database is slow.
    queueLimit: options.poolSize * 100,
  });
  const timeoutMs = options.queryTimeoutMs ?? QUERY_TIMEOUT_MS;
  pool.on("connection", (connection) => {
    limitQueryTime(connection, timeoutMs);
    readCommittedWritesOnGalera(connection);
  });
  const db = new Kysely<Database>({ dialect: new MysqlDialect({ pool }) });
  return { db, store: "mysql", pool, close: () => db.destroy() };
}

/**
 * On a Galera node, makes every read of this connection wait until the node
 * has applied every write the cluster had committed when the read began
 * (`wsrep_sync_wait = 1`): a session started through node 1 is then found
 * by a GetSession, an answer or a list through node 2 right after. With
 * Galera's default (0) such reads missed the new session 2-9% of the time.
 * It costs each read one round of the cluster's group communication.
 * Sent before the connection's first query (mysql2 runs a connection's
 * queries in order); on a server without wsrep (MariaDB) it sets 0, on MySQL
 * (no such variable) it fails harmlessly.
 */
function readCommittedWritesOnGalera(connection: PoolConnection): void {
  connection.query("SET SESSION wsrep_sync_wait = IF(@@wsrep_on, 1, 0)", () => {});
}

/**
 * Makes every callback-style `query` on `connection` (the form Kysely uses)
 * fail after `timeoutMs` with a fatal PROTOCOL_SEQUENCE_TIMEOUT error, which
 * the service answers as `unavailable`. The connection is destroyed, so the
 * pool drops it and serves its waiters with a new one; the late answer, if
 * any, is ignored. mysql2's own `timeout` option is not used: Kysely cannot
 * pass it, and it leaves the connection in the pool mid-command.
 */
function limitQueryTime(connection: PoolConnection, timeoutMs: number): void {
  const query = connection.query.bind(connection) as (...args: unknown[]) => unknown;
  connection.query = ((...args: unknown[]) => {
    const callback = args.at(-1);
    if (typeof callback !== "function") return query(...args);
    let settled = false;
    const timer = setTimeout(() => {
      if (settled) return;
      settled = true;
      connection.destroy();
      const err = Object.assign(new Error(`query timed out after ${timeoutMs} ms`), {
        code: "PROTOCOL_SEQUENCE_TIMEOUT",
        fatal: true,
      });
      callback(err);
    }, timeoutMs);
    return query(...args.slice(0, -1), (...result: unknown[]) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      callback(...result);
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
