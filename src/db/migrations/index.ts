import type { Migration, MigrationProvider } from "kysely";
import * as initial from "./0001-initial.js";
import * as userIdNoPad from "./0002-user-id-no-pad.js";

/**
 * Migrations, imported statically: Kysely's FileMigrationProvider imports by
 * path at run time, which fails under vitest on Node 20 and in bundles.
 * Keys sort in the order the migrations apply.
 */
const migrations: Record<string, Migration> = {
  "0001-initial": initial,
  "0002-user-id-no-pad": userIdNoPad,
};

export const migrationProvider: MigrationProvider = {
  getMigrations: async () => migrations,
};
