import type { Connection } from "mysql2";

/** What a connection learnt about its server when it was opened (see `prepareSession`). */
export interface ServerSession {
  /** The server this connection talks to (host name, port, data directory, server id). */
  server: string;
  /**
   * Whether `KILL <threadId>` sent to `server` names this session: the id the
   * handshake gave is the server's own (a proxy that answers the handshake
   * itself, as ProxySQL and MaxScale do, gives ids of its own).
   */
  killable: boolean;
  /** Whether the server is a Galera node. */
  galera: boolean;
}

/**
 * sql_mode flags that change how statement text is read: a backslash as a
 * plain character (NO_BACKSLASH_ESCAPES), a double-quoted string as a name
 * (ANSI_QUOTES), `||` as concatenation, and the combined modes that set them.
 */
const TEXT_CHANGING_MODES = new Set([
  "NO_BACKSLASH_ESCAPES",
  "ANSI_QUOTES",
  "PIPES_AS_CONCAT",
  "ANSI",
  "ORACLE",
  "MSSQL",
  "DB2",
  "MAXDB",
  "POSTGRESQL",
]);

/** Longest one set-up statement may take: a hung server fails the connection, not the caller's wait. */
const SETUP_TIMEOUT_MS = 2000;

/** Runs one statement of the service's own (no values) on `connection`. */
export function ask<T = Record<string, unknown>[]>(
  connection: Pick<Connection, "query">,
  statement: string,
): Promise<T> {
  return new Promise((resolve, reject) => {
    connection.query(
      { sql: statement, timeout: SETUP_TIMEOUT_MS },
      (err: unknown, rows: unknown) => (err ? reject(err) : resolve(rows as T)),
    );
  });
}

/**
 * Readies a new connection before its first use, or fails it: `sql_mode` without the flags
 * above (checked), the server's identity for KILLs, Galera or not (failing closed), limits.
 */
export async function prepareSession(
  connection: Connection,
  timeoutMs?: number,
): Promise<ServerSession> {
  const [facts] = await ask(
    connection,
    "SELECT @@SESSION.sql_mode AS mode, CONNECTION_ID() AS id, @@hostname AS host, @@port AS port, @@datadir AS datadir, @@server_id AS serverId",
  );
  if (facts === undefined) throw new Error("the database did not describe the session");
  await pinSqlMode(connection, String(facts.mode));
  if (timeoutMs !== undefined) await limitSession(connection, timeoutMs);
  const galera = await isGalera(connection);
  return {
    server: [facts.host, facts.port, facts.datadir, facts.serverId].join("|"),
    killable: String(facts.id) === String(connection.threadId),
    galera,
  };
}

/** Removes the text-changing flags from the session's `sql_mode` and checks that they are gone. */
async function pinSqlMode(connection: Connection, mode: string): Promise<void> {
  const flags = mode.split(",").filter((f) => f !== "");
  if (!flags.some((f) => TEXT_CHANGING_MODES.has(f))) return;
  const kept = flags.filter((f) => !TEXT_CHANGING_MODES.has(f));
  // Names the server gave; checked, as they go into the statement's text.
  if (!kept.every((f) => /^[A-Z0-9_]+$/.test(f))) {
    throw new Error(`unexpected sql_mode from the database: ${mode}`);
  }
  await ask(connection, `SET SESSION sql_mode = '${kept.join(",")}'`);
  const [now] = await ask(connection, "SELECT @@SESSION.sql_mode AS mode");
  const left = String(now?.mode)
    .split(",")
    .filter((f) => TEXT_CHANGING_MODES.has(f));
  if (left.length > 0) {
    throw new Error(
      `the database session kept sql_mode ${left.join(",")} after SET SESSION sql_mode: refusing to use it`,
    );
  }
}

/**
 * Server-side limits so no connection holds locks for long: lock waits fail
 * (errno 1205, retried) before our own timeout; a session idle in a
 * transaction (a client cut off by a partition) is killed after twice the
 * limit; the server stops overlong statements. A variable the server lacks
 * (MySQL vs MariaDB) is skipped.
 */
async function limitSession(connection: Connection, timeoutMs: number): Promise<void> {
  const seconds = Math.max(1, Math.ceil(timeoutMs / 1000));
  const lockWait = Math.max(1, Math.floor(timeoutMs / 2000));
  const skip = () => undefined;
  await ask(connection, `SET SESSION innodb_lock_wait_timeout = ${lockWait}`).catch(skip);
  await ask(
    connection,
    `SET SESSION idle_transaction_timeout = ${2 * seconds}, max_statement_time = ${timeoutMs / 1000}`,
  ).catch(skip);
  await ask(connection, `SET SESSION max_execution_time = ${timeoutMs}`).catch(skip);
}

/** errno of "Unknown system variable": MySQL has no wsrep_on. */
const ER_UNKNOWN_SYSTEM_VARIABLE = 1193;

/**
 * Whether the server is a Galera node; there, reads wait until the node has
 * applied every write committed cluster-wide (`wsrep_sync_wait = 1`), so a
 * session started through one node is found through another right after.
 */
async function isGalera(connection: Connection): Promise<boolean> {
  let on: unknown;
  try {
    [{ on } = { on: undefined }] = await ask(connection, "SELECT @@wsrep_on AS `on`");
  } catch (err) {
    if ((err as { errno?: unknown }).errno === ER_UNKNOWN_SYSTEM_VARIABLE) return false;
    throw err;
  }
  if (Number(on) !== 1) return false;
  await ask(connection, "SET SESSION wsrep_sync_wait = 1");
  return true;
}
