import { sql } from "kysely";
import { afterEach, describe, expect, it } from "vitest";
import {
  createDatabaseIfMissing,
  type DatabaseHandle,
  dropDatabase,
  openDatabase,
} from "../../src/db/connect.js";
import { isMigrated, migrateToLatest } from "../../src/db/migrate.js";
import { MIGRATION_LOCK_TABLE } from "../../src/db/migration-lock.js";
import { newTestDatabaseUrl, testStore } from "../support/database.js";
import { defaultDatabaseLimits } from "../support/settings.js";

/**
 * Replicas starting at once on an empty database: one applies the
 * migrations, the others wait for it. (On Galera too: npm run test:cluster.)
 */
describe.skipIf(testStore() === "sqlite")("migrations started by many processes at once", () => {
  let url = "";
  let handles: DatabaseHandle[] = [];

  afterEach(async () => {
    await Promise.all(handles.map((h) => h.close()));
    handles = [];
    await dropDatabase(url);
  });

  async function freshDatabase(pools: number) {
    url = newTestDatabaseUrl("mysql");
    await createDatabaseIfMissing(url);
    handles = Array.from({ length: pools }, () =>
      openDatabase({ url, poolSize: 2, connectTimeoutMs: 3000, limits: defaultDatabaseLimits() }),
    );
    return handles.map((h) => h.db);
  }

  it("five at once: one applies every migration, the others find them applied", async () => {
    const dbs = await freshDatabase(5);
    const applied = await Promise.all(dbs.map((db) => migrateToLatest(db)));
    const appliers = applied.filter((names) => names.length > 0);
    expect(appliers).toHaveLength(1);
    const [db] = dbs;
    if (db === undefined) throw new Error("no pool");
    expect(await isMigrated(db)).toBe(true);
    const { rows } = await sql<{
      n: number;
    }>`SELECT COUNT(*) AS n FROM ${sql.table(MIGRATION_LOCK_TABLE)}`.execute(db);
    expect(Number(rows[0]?.n)).toBe(0);
  });

  it("takes over a lock left by a holder that died, once its lease has expired", async () => {
    const [db] = await freshDatabase(1);
    if (db === undefined) throw new Error("no pool");
    await sql`CREATE TABLE ${sql.table(MIGRATION_LOCK_TABLE)} (
      id VARCHAR(32) CHARACTER SET ascii NOT NULL PRIMARY KEY,
      holder CHAR(36) CHARACTER SET ascii NOT NULL,
      expires_at DATETIME(3) NOT NULL) ENGINE=InnoDB`.execute(db);
    await sql`INSERT INTO ${sql.table(MIGRATION_LOCK_TABLE)} VALUES
      ('migrate', 'dead-holder-dead-holder-dead-holder0', UTC_TIMESTAMP(3) - INTERVAL 1 SECOND)`.execute(
      db,
    );
    expect((await migrateToLatest(db)).length).toBeGreaterThan(0);
    expect(await isMigrated(db)).toBe(true);
  });

  it("waits for a live holder rather than migrating beside it", async () => {
    const [db] = await freshDatabase(1);
    if (db === undefined) throw new Error("no pool");
    await sql`CREATE TABLE ${sql.table(MIGRATION_LOCK_TABLE)} (
      id VARCHAR(32) CHARACTER SET ascii NOT NULL PRIMARY KEY,
      holder CHAR(36) CHARACTER SET ascii NOT NULL,
      expires_at DATETIME(3) NOT NULL) ENGINE=InnoDB`.execute(db);
    await sql`INSERT INTO ${sql.table(MIGRATION_LOCK_TABLE)} VALUES
      ('migrate', 'live-holder-live-holder-live-holder0', UTC_TIMESTAMP(3) + INTERVAL 1 MINUTE)`.execute(
      db,
    );
    await expect(migrateToLatest(db, { waitMs: 600, pollMs: 100 })).rejects.toThrow(
      /migration lock/,
    );
    expect(await isMigrated(db)).toBe(false);
  });
});
