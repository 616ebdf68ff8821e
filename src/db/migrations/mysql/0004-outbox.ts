import { type Kysely, sql } from "kysely";

/**
 * The transactional outbox: one row per event, written with its change,
 * deleted once published. `seq` orders a session's events as they committed;
 * `lease_until` (epoch ms, 0 = free) is a relay's claim. No foreign key: an
 * expired session's event outlives its row.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(`CREATE TABLE IF NOT EXISTS practice_outbox (
      seq BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
      event_id CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      type VARCHAR(64) CHARACTER SET ascii NOT NULL,
      session_id CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      created_at DATETIME(3) NOT NULL,
      body TEXT CHARACTER SET utf8mb4 NOT NULL,
      lease_until BIGINT NOT NULL DEFAULT 0,
      KEY outbox_by_session (session_id, seq)
    )`)
    .execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql.raw("DROP TABLE IF EXISTS practice_outbox").execute(db);
}
