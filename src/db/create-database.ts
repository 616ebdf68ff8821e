import { mkdirSync, statSync } from "node:fs";
import { dirname } from "node:path";
import type { PoolConnection } from "mysql2";
import type { Connection } from "mysql2/promise";
import { mysqlPool } from "./mysql-pool.js";
import { prepareSession } from "./mysql-session.js";
import { databaseName, sqliteFile, storeOf } from "./store-url.js";

/**
 * Creates the URL's database if it is missing: the MySQL database (needs the
 * CREATE privilege); for SQLite, its folder only with `createFolder` (the
 * default store's `./data`), else a missing folder is an ENOENT naming it:
 * a mistyped path makes nothing. On MySQL its connection is readied as every
 * other (mysql-session.ts), so a server whose sessions the service cannot use
 * is refused here, at start-up, with an UnusableSession.
 */
export async function createDatabaseIfMissing(
  url: string,
  connectTimeoutMs = 5000,
  { createFolder = false } = {},
): Promise<void> {
  if (storeOf(url) === "sqlite") {
    const file = sqliteFile(url);
    if (file === ":memory:") return;
    const folder = dirname(file);
    if (createFolder) mkdirSync(folder, { recursive: true });
    else if (!statSync(folder).isDirectory()) {
      throw Object.assign(new Error(`${folder} is not a folder`), { code: "EEXIST", path: folder });
    }
    return;
  }
  const name = databaseName(url);
  await onServer(url, connectTimeoutMs, async (c) => {
    // Look first: a service account may use its database without the right to create one.
    const [rows] = await c.execute(
      "SELECT 1 FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?",
      [name],
    );
    if ((rows as unknown[]).length > 0) return;
    // The name is letters, digits and underscores only (databaseName).
    await c.query(
      `CREATE DATABASE IF NOT EXISTS \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`,
    );
  });
}

/** Drops the URL's MySQL database: for tests (an in-memory SQLite one goes with its handle). */
export async function dropDatabase(url: string): Promise<void> {
  if (storeOf(url) === "sqlite") return;
  const name = databaseName(url);
  await onServer(url, 10_000, async (c) => {
    await c.query(`DROP DATABASE IF EXISTS \`${name}\``);
  });
}

/** `work` on a readied connection of its own to the URL's server, no database selected. */
async function onServer(
  url: string,
  connectTimeoutMs: number,
  work: (connection: Connection) => Promise<void>,
): Promise<void> {
  const server = new URL(url);
  server.pathname = "/";
  const pool = mysqlPool({ url: server.toString(), connectTimeoutMs }, 1);
  try {
    const connection = await new Promise<PoolConnection>((resolve, reject) =>
      pool.getConnection((err, c) => (err ? reject(err) : resolve(c))),
    );
    try {
      await prepareSession(connection, connectTimeoutMs);
      await work(connection.promise());
    } finally {
      connection.release();
    }
  } finally {
    await new Promise((resolve) => pool.end(resolve));
  }
}
