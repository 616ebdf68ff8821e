import { type Kysely, Migrator, SqliteAdapter } from "kysely";
import type { Database } from "./database.js";
import { migrationProvider } from "./migrations/index.js";

function migrator(db: Kysely<Database>): Migrator {
  const store = db.getExecutor().adapter instanceof SqliteAdapter ? "sqlite" : "mysql";
  return new Migrator({ db, provider: migrationProvider(store) });
}

/** Applies every pending migration; throws with the failing migration's name. */
export async function migrateToLatest(db: Kysely<Database>): Promise<string[]> {
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
