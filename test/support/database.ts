import { randomBytes } from "node:crypto";
import type { Pool } from "mysql2";
import { createDatabaseIfMissing, dropDatabase, openDatabase } from "../../src/db/connect.js";
import type { Db } from "../../src/db/database.js";
import { migrateToLatest } from "../../src/db/migrate.js";

/** The server the tests make their databases on: TEST_DATABASE_URL, or local root. */
export function testServerUrl(): string {
  return process.env.TEST_DATABASE_URL ?? "mysql://root@127.0.0.1:3306/";
}

export interface TestDatabase {
  url: string;
  db: Db;
  /** The mysql2 pool under `db`. */
  pool: Pool;
  /** Drops the database. */
  drop(): Promise<void>;
}

/** A new, migrated database with a random name, dropped by `drop()`. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const url = new URL(testServerUrl());
  url.pathname = `/practice_test_${randomBytes(6).toString("hex")}`;
  const dbUrl = url.toString();
  await createDatabaseIfMissing(dbUrl);
  const handle = openDatabase({ url: dbUrl, poolSize: 10, connectTimeoutMs: 3000 });
  await migrateToLatest(handle.db);
  return {
    url: dbUrl,
    db: handle.db,
    pool: handle.pool,
    async drop() {
      await handle.close();
      await dropDatabase(dbUrl);
    },
  };
}
