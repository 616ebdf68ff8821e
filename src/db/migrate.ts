import { type Kysely, Migrator } from "kysely";
import type { Database } from "./database.js";
import { migrationProvider } from "./migrations/index.js";

/** Applies every pending migration; throws with the failing migration's name. */
export async function migrateToLatest(db: Kysely<Database>): Promise<string[]> {
  const migrator = new Migrator({ db, provider: migrationProvider });
  const { error, results = [] } = await migrator.migrateToLatest();
  const failed = results.find((r) => r.status === "Error");
  if (error !== undefined) {
    throw new Error(`migration ${failed?.migrationName ?? "(setup)"} failed`, { cause: error });
  }
  return results.filter((r) => r.status === "Success").map((r) => r.migrationName);
}

/** Whether every known migration has been applied: for readiness checks. */
export async function isMigrated(db: Kysely<Database>): Promise<boolean> {
  const migrator = new Migrator({ db, provider: migrationProvider });
  const migrations = await migrator.getMigrations();
  return migrations.every((m) => m.executedAt !== undefined);
}
