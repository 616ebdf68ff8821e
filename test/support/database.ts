import { randomBytes } from "node:crypto";
import type { Pool } from "mysql2";
import { createConnection } from "mysql2/promise";
import {
  createDatabaseIfMissing,
  dropDatabase,
  openDatabase,
  type Store,
} from "../../src/db/connect.js";
import type { Db } from "../../src/db/database.js";
import { migrateToLatest } from "../../src/db/migrate.js";
import { defaultDatabaseLimits } from "./settings.js";

/** The server the tests make their MySQL databases on: TEST_DATABASE_URL, or local root. */
export function testServerUrl(): string {
  return process.env.TEST_DATABASE_URL ?? "mysql://root@127.0.0.1:3306/";
}

/** Why MySQL does not answer at `url`, or undefined when it does. */
export async function mysqlAnswers(url: string): Promise<string | undefined> {
  try {
    const connection = await createConnection({ uri: url, connectTimeout: 3000 });
    await connection.end();
    return undefined;
  } catch (err) {
    return String(err);
  }
}

/** The store this test run is for (vitest.config.ts runs the suite once per store). */
export function testStore(): Store {
  return process.env.TEST_STORE === "mysql" ? "mysql" : "sqlite";
}

export interface TestDatabase {
  url: string;
  store: Store;
  db: Db;
  /** The mysql2 pool under `db`; none for SQLite. */
  pool: Pool | undefined;
  /** Closes and drops the database. */
  drop(): Promise<void>;
}

/** The URL of a new test database: SQLite in memory, or MySQL with a random name. */
export function newTestDatabaseUrl(store: Store = testStore()): string {
  if (store === "sqlite") return "sqlite::memory:";
  const server = new URL(testServerUrl());
  server.pathname = `/practice_test_${randomBytes(6).toString("hex")}`;
  return server.toString();
}

/**
 * A new database with no tables yet (migrations' own tests): on MySQL one
 * with a random name, dropped by `drop()`; on SQLite an in-memory one, gone
 * when closed.
 */
export async function createEmptyTestDatabase(store: Store = testStore()): Promise<TestDatabase> {
  const url = newTestDatabaseUrl(store);
  await createDatabaseIfMissing(url);
  const handle = openDatabase({
    url,
    poolSize: 10,
    connectTimeoutMs: 3000,
    limits: defaultDatabaseLimits(),
  });
  return {
    url,
    store,
    db: handle.db,
    pool: handle.pool,
    async drop() {
      await handle.close();
      await dropDatabase(url);
    },
  };
}

/** A new, migrated database (see createEmptyTestDatabase). */
export async function createTestDatabase(store: Store = testStore()): Promise<TestDatabase> {
  const database = await createEmptyTestDatabase(store);
  await migrateToLatest(database.db);
  return database;
}
