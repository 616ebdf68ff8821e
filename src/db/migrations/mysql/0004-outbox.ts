import { type Kysely, sql } from "kysely";

/**
 * The transactional outbox: one row per event, written in the transaction of
 * the change it describes, deleted once published (src/events/relay.ts).
 *
 * `seq` orders a session's events as they committed: the writes of one
 * session run one after the other under its row lock. `lease_until` (epoch
 * ms; 0 = free) is a relay's claim on a row. No foreign key to the session:
 * an expired session's event outlives the row it describes.
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
