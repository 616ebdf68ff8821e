import type { Migration, MigrationProvider } from "kysely";
import type { Store } from "../connect.js";
import * as mysqlInitial from "./mysql/0001-initial.js";
import * as sqliteInitial from "./sqlite/0001-initial.js";

/**
 * Migrations per store, imported statically: Kysely's FileMigrationProvider
 * imports by path at run time, which fails under vitest on Node 20 and in
 * bundles. Keys sort in the order the migrations apply; both stores keep
 * the same names, so a migration is one step whatever the store.
 */
const migrations: Record<Store, Record<string, Migration>> = {
  mysql: { "0001-initial": mysqlInitial },
  sqlite: { "0001-initial": sqliteInitial },
};

export function migrationProvider(store: Store): MigrationProvider {
  return { getMigrations: async () => migrations[store] };
}
