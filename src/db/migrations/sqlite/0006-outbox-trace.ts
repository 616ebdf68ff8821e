import { type Kysely, sql } from "kysely";

/** practice_outbox.trace_context (see ../mysql/0006-outbox-trace.ts). */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE practice_outbox ADD COLUMN trace_context TEXT`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE practice_outbox DROP COLUMN trace_context`.execute(db);
}
