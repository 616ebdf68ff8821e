import { randomUUID } from "node:crypto";
import { sql } from "kysely";
import { sleep } from "../domain/clock.js";
import type { Db } from "./database.js";
import { isDuplicateKey, isTransientConflict } from "./errors.js";

/**
 * A migration lock that holds across a Galera cluster: Kysely's GET_LOCK is
 * per node. Taking it inserts a fixed primary key; a second taker gets a
 * duplicate key on one server, or a certification failure (1213) on Galera,
 * and waits until the row is gone. A dead holder's row expires after
 * LEASE_SECONDS.
 */
export const MIGRATION_LOCK_TABLE = "practice_migration_lock";

/** A migration run holding the lock longer than this is taken to be dead. */
const LEASE_SECONDS = 120;

export interface MigrationLockOptions {
  /** Longest to wait for another holder before giving up (default: two leases). */
  waitMs?: number;
  /** Pause between looks at the lock (jittered up to twice this). */
  pollMs?: number;
  /** Ends the wait for another holder (rejecting with its reason); never a run under way. */
  signal?: AbortSignal;
}

/**
 * Runs `run` holding the migration lock unless `done()` (checked before each
 * attempt) says another process has already migrated; `undefined` then.
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
    options.signal?.throwIfAborted();
    await sleep(pollMs * (1 + Math.random()), options.signal);
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
