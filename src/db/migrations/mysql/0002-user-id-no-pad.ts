import { type Kysely, sql } from "kysely";

/**
 * practice_sessions.user_id compared byte for byte, trailing spaces included:
 * utf8mb4_bin pads, so "alice " would be alice. NO PAD binary collations:
 * utf8mb4_nopad_bin on MariaDB, utf8mb4_0900_bin on MySQL 8.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const collation = await noPadBinaryCollation(db);
  await sql
    .raw(
      `ALTER TABLE practice_sessions MODIFY user_id VARCHAR(255) CHARACTER SET utf8mb4 COLLATE ${collation} NOT NULL`,
    )
    .execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      "ALTER TABLE practice_sessions MODIFY user_id VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL",
    )
    .execute(db);
}

async function noPadBinaryCollation(db: Kysely<unknown>): Promise<string> {
  const { rows } = await sql<{ v: string }>`SELECT VERSION() AS v`.execute(db);
  return /mariadb/i.test(rows[0]?.v ?? "") ? "utf8mb4_nopad_bin" : "utf8mb4_0900_bin";
}
