import type { Kysely } from "kysely";

/**
 * Nothing to do: SQLite's BINARY collation already compares every byte,
 * trailing spaces included (see ../mysql/0002-user-id-no-pad.ts). Kept so
 * that both stores share one list of migration names.
 */
export async function up(_db: Kysely<unknown>): Promise<void> {}

export async function down(_db: Kysely<unknown>): Promise<void> {}
