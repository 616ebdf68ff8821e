import { type Kysely, sql } from "kysely";

/**
 * practice_outbox.trace_context: the W3C Trace Context (and any other
 * propagator's fields) of the transaction that wrote the event, as a JSON
 * object of header names to values; NULL when it was written untraced. The
 * relay publishes the event in that trace (src/events/relay.ts). Added only if
 * missing: MySQL 8 has no ADD COLUMN IF NOT EXISTS, and DDL is not transactional.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const { rows } = await sql<{ n: number }>`
    SELECT COUNT(*) AS n FROM information_schema.COLUMNS
    WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'practice_outbox'
      AND COLUMN_NAME = 'trace_context'`.execute(db);
  if (Number(rows[0]?.n ?? 0) === 0) {
    await sql`ALTER TABLE practice_outbox
      ADD COLUMN trace_context TEXT CHARACTER SET utf8mb4 NULL`.execute(db);
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE practice_outbox DROP COLUMN trace_context`.execute(db);
}
