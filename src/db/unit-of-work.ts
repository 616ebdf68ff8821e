import type { Transaction } from "kysely";
import type { Database, Db } from "./database.js";

/** The statements of one change, committed together or not at all; repositories take it as `Db`. */
export type Work = Transaction<Database>;

/**
 * Runs `work` in one transaction on `db`: committed when it resolves, rolled
 * back when it throws, as Kysely's `db.transaction().execute` does.
 */
export function inTransaction<T>(db: Db, work: (trx: Work) => Promise<T>): Promise<T> {
  return db.transaction().execute(work);
}
