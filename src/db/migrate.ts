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
 * Returns those this call applied. On MySQL/MariaDB concurrent callers (also
 * on several Galera nodes) serialize on the cluster-wide migration lock.
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
