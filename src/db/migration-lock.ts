import { randomUUID } from "node:crypto";
import { sql } from "kysely";
import type { Db } from "./database.js";
import { isDuplicateKey, isTransientConflict } from "./errors.js";

/**
 * A lock for running migrations that holds across every node of a Galera
 * cluster, as well as on one server. Kysely's own MySQL lock is GET_LOCK,
 * which is per node: three replicas starting at once on three Galera nodes
 * all took it, raced on Kysely's tables and one exited on a duplicate key.
 *
 * This lock is a row: taking it is an INSERT of a fixed primary key. On one
 * server the second INSERT waits for the first and gets a duplicate key; on
 * Galera, two nodes inserting it at once both succeed locally, and
 * certification lets the first to commit win and rolls the other back
 * (errno 1213). Either way exactly one process holds it. The others wait
 * until it is gone, then find the migrations applied and carry on.
 *
 * A holder that dies leaves its row: it expires after LEASE_SECONDS, and the
 * next taker deletes an expired row before inserting its own.
 */
export const MIGRATION_LOCK_TABLE = "practice_migration_lock";

/** A migration run holding the lock longer than this is taken to be dead. */
export const LEASE_SECONDS = 120;

export interface MigrationLockOptions {
  /** Longest to wait for another holder before giving up (default: two leases). */
  waitMs?: number;
  /** Pause between looks at the lock (jittered up to twice this). */
  pollMs?: number;
}

/**
 * Runs `run` while holding the migration lock, unless `done()` says there is
 * nothing to do (checked before each attempt to take the lock, so a process
 * that waited for another's run skips its own). Returns `run`'s result, or
 * `undefined` when it did not run.
 */
export async function withMigrationLock<T>(
  db: Db,
  done: () => Promise<boolean>,
  run: () => Promise<T>,
  options: MigrationLockOptions = {},
): Promise<T | undefined> {
  const waitMs = options.waitMs ?? 2 * LEASE_SECONDS * 1000;
  const pollMs = options.pollMs ?? 250;
  const holder = randomUUID();
  const deadline = Date.now() + waitMs;
  await sql`CREATE TABLE IF NOT EXISTS ${sql.table(MIGRATION_LOCK_TABLE)} (
    id VARCHAR(32) CHARACTER SET ascii NOT NULL PRIMARY KEY,
    holder CHAR(36) CHARACTER SET ascii NOT NULL,
    expires_at DATETIME(3) NOT NULL
  ) ENGINE=InnoDB`.execute(db);
  for (;;) {
    if (await done()) return undefined;
    if (await take(db, holder)) {
      try {
        return await run();
      } finally {
        await sql`DELETE FROM ${sql.table(MIGRATION_LOCK_TABLE)} WHERE id = 'migrate' AND holder = ${holder}`.execute(
          db,
        );
      }
    }
    if (Date.now() > deadline) {
      throw new Error(`another process has held the migration lock for over ${waitMs} ms`);
    }
    await new Promise((resolve) => setTimeout(resolve, pollMs * (1 + Math.random())));
  }
}

/** Inserts the lock row (after clearing an expired one); false if another holds it. */
async function take(db: Db, holder: string): Promise<boolean> {
  try {
    await sql`DELETE FROM ${sql.table(MIGRATION_LOCK_TABLE)} WHERE id = 'migrate' AND expires_at < UTC_TIMESTAMP(3)`.execute(
      db,
    );
    await sql`INSERT INTO ${sql.table(MIGRATION_LOCK_TABLE)} (id, holder, expires_at)
      VALUES ('migrate', ${holder}, UTC_TIMESTAMP(3) + INTERVAL ${sql.lit(LEASE_SECONDS)} SECOND)`.execute(
      db,
    );
    return true;
  } catch (err) {
    if (isDuplicateKey(err, "PRIMARY") || isTransientConflict(err)) return false;
    throw err;
  }
}
