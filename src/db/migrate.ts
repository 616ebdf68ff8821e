import { type Kysely, Migrator, SqliteAdapter } from "kysely";
import type { Database } from "./database.js";
import { type MigrationLockOptions, withMigrationLock } from "./migration-lock.js";
import { migrationProvider } from "./migrations/index.js";

function isSqlite(db: Kysely<Database>): boolean {
  return db.getExecutor().adapter instanceof SqliteAdapter;
}

function migrator(db: Kysely<Database>): Migrator {
  return new Migrator({ db, provider: migrationProvider(isSqlite(db) ? "sqlite" : "mysql") });
}

/**
 * Applies every pending migration; throws with the failing migration's name.
 * Returns the migrations this call applied: none when they were applied
 * already, or by another process meanwhile.
 *
 * On MySQL/MariaDB many processes may call it at once (replicas starting
 * together, on one server or on several Galera nodes): one takes the
 * cluster-wide migration lock and applies them, the others wait for it and
 * find nothing left to do. SQLite is one process's file: Kysely's lock is enough.
 */
export async function migrateToLatest(
  db: Kysely<Database>,
  lock?: MigrationLockOptions,
): Promise<string[]> {
  if (isSqlite(db)) return applyPending(db);
  const applied = await withMigrationLock(
    db,
    () => isMigrated(db),
    () => applyPending(db),
    lock,
  );
  return applied ?? [];
}

async function applyPending(db: Kysely<Database>): Promise<string[]> {
  const { error, results = [] } = await migrator(db).migrateToLatest();
  const failed = results.find((r) => r.status === "Error");
  if (error !== undefined) {
    throw new Error(`migration ${failed?.migrationName ?? "(setup)"} failed`, { cause: error });
  }
  return results.filter((r) => r.status === "Success").map((r) => r.migrationName);
}

/** Whether every known migration has been applied: for readiness checks. */
export async function isMigrated(db: Kysely<Database>): Promise<boolean> {
  const migrations = await migrator(db).getMigrations();
  return migrations.every((m) => m.executedAt !== undefined);
}
