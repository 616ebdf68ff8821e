import { type Kysely, sql } from "kysely";

/**
 * practice_sessions.mode gains 'missed': a session of the questions the
 * learner did not answer correctly in their latest completed session of the
 * quiz. A value added at the end of an ENUM changes only the table's
 * definition (no rows are rewritten), and running it again is harmless.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE practice_sessions
    MODIFY COLUMN mode ENUM('full', 'review', 'missed') CHARACTER SET ascii NOT NULL DEFAULT 'full'`.execute(
    db,
  );
}

/** Missed sessions are deleted (their snapshots and answers with them): the old ENUM cannot hold them. */
export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DELETE FROM practice_sessions WHERE mode = 'missed'`.execute(db);
  await sql`ALTER TABLE practice_sessions
    MODIFY COLUMN mode ENUM('full', 'review') CHARACTER SET ascii NOT NULL DEFAULT 'full'`.execute(
    db,
  );
}
