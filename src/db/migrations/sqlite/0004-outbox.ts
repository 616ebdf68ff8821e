import { type Kysely, sql } from "kysely";

/** The outbox (see ../mysql/0004-outbox.ts) in SQLite's words. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(`CREATE TABLE IF NOT EXISTS practice_outbox (
      seq INTEGER PRIMARY KEY AUTOINCREMENT,
      event_id TEXT NOT NULL,
      type TEXT NOT NULL,
      session_id TEXT NOT NULL,
      created_at TEXT NOT NULL,
      body TEXT NOT NULL,
      lease_until INTEGER NOT NULL DEFAULT 0
    )`)
    .execute(db);
  await sql
    .raw("CREATE INDEX IF NOT EXISTS outbox_by_session ON practice_outbox (session_id, seq)")
    .execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql.raw("DROP TABLE IF EXISTS practice_outbox").execute(db);
}
