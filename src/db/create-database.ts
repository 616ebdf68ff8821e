import { mkdirSync, statSync } from "node:fs";
import { dirname } from "node:path";
import { mysqlPool } from "./mysql-pool.js";
import { databaseName, sqliteFile, storeOf } from "./store-url.js";

/**
 * Creates the URL's database if it is missing: the MySQL database (needs the
 * CREATE privilege); for SQLite, its folder only with `createFolder` (the
 * default store's `./data`), else a missing folder is an ENOENT naming it:
 * a mistyped path makes nothing.
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
  const pool = serverPool(url, connectTimeoutMs);
  try {
    // Look first: a service account may use its database without the right to create one.
    const [rows] = await pool.execute(
      "SELECT 1 FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?",
      [name],
    );
    if ((rows as unknown[]).length > 0) return;
    // The name is letters, digits and underscores only (databaseName).
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
  const pool = serverPool(url, 10_000);
  try {
    await pool.query(`DROP DATABASE IF EXISTS \`${name}\``);
  } finally {
    await pool.end();
  }
}

/** A one-connection pool to the URL's server, no database selected. */
function serverPool(url: string, connectTimeoutMs: number) {
  const server = new URL(url);
  server.pathname = "/";
  return mysqlPool({ url: server.toString(), connectTimeoutMs }, 1).promise();
}
