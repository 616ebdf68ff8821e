import { SqliteAdapter, sql } from "kysely";
import type { Db } from "./database.js";

/**
 * Whether this database node can serve the service's writes, asked through
 * `query` (one statement, its rows back). `SELECT 1` is not enough: a Galera
 * node cut off from the primary component answers it, yet refuses every
 * real statement (errno 1047). So:
 * - a real table is read (a table that does not exist yet is the
 *   migration check's business, not a fault of the node);
 * - where wsrep is on (a Galera node), `wsrep_ready` must be ON
 *   and `wsrep_local_state_comment` Synced.
 * Rejects when the node cannot serve.
 */
export async function checkServing(
  query: (statement: string) => Promise<Record<string, unknown>[]>,
  dialect: "mysql" | "sqlite",
): Promise<void> {
  try {
    await query("SELECT 1 FROM practice_sessions LIMIT 1");
  } catch (err) {
    if (!isMissingTable(err)) throw err;
  }
  if (dialect !== "mysql") return;
  // MariaDB has the wsrep variables even when not in a cluster (wsrep_on OFF).
  const on = await query("SHOW GLOBAL VARIABLES LIKE 'wsrep_on'");
  if (on[0]?.Value !== "ON") return;
  const rows = await query(
    "SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_ready', 'wsrep_local_state_comment')",
  );
  const status = new Map(rows.map((r) => [String(r.Variable_name), String(r.Value)]));
  const ready = status.get("wsrep_ready");
  const state = status.get("wsrep_local_state_comment");
  if (ready !== "ON" || state !== "Synced") {
    throw new Error(`galera node not serving: wsrep_ready=${ready}, state=${state}`);
  }
}

/** MySQL errno 1146 (ER_NO_SUCH_TABLE), or SQLite's "no such table". */
function isMissingTable(err: unknown): boolean {
  const e = err as { errno?: unknown; message?: unknown };
  return e.errno === 1146 || (typeof e.message === "string" && e.message.includes("no such table"));
}

/** `checkServing` through `db` itself (its pool: tests, tools). */
export function checkServingOn(db: Db): Promise<void> {
  const sqlite = db.getExecutor().adapter instanceof SqliteAdapter;
  return checkServing(
    async (statement) => (await sql.raw<Record<string, unknown>>(statement).execute(db)).rows,
    sqlite ? "sqlite" : "mysql",
  );
}
