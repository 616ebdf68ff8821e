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

/** One statement of the service's own (no values) on a connection being readied. */
type Ask = <T = Record<string, unknown>[]>(statement: string) => Promise<T>;

/**
 * `connection`'s statements, each answered by `deadline` (epoch ms) or failed
 * as mysql2 fails a statement past its timeout: a set-up has one budget for
 * all its statements, so a slow server cannot stretch it statement by statement.
 */
function asker(connection: Pick<Connection, "query">, deadline: number): Ask {
  return (statement) =>
    new Promise((resolve, reject) => {
      const left = deadline - Date.now();
      if (left <= 0) {
        reject(
          Object.assign(new Error("the connection's set-up ran out of time"), {
            code: "PROTOCOL_SEQUENCE_TIMEOUT",
          }),
        );
        return;
      }
      connection.query({ sql: statement, timeout: left }, (err: unknown, rows: unknown) =>
        err ? reject(err) : resolve(rows as never),
      );
    });
}

/**
 * Readies a new connection before its first use, or fails it: `sql_mode` without the flags
 * above (checked), the server's identity for KILLs, Galera or not (failing closed), limits.
 * All of it within `setupMs` (DB_CONNECT_TIMEOUT_MS: a hung or crawling server fails the
 * connection, not the caller's wait); `timeoutMs` sets the session's own statement limits.
 */
export async function prepareSession(
  connection: Connection,
  setupMs: number,
  timeoutMs?: number,
): Promise<ServerSession> {
  const ask = asker(connection, Date.now() + setupMs);
  const [facts] = await ask(
    "SELECT @@SESSION.sql_mode AS mode, CONNECTION_ID() AS id, @@hostname AS host, @@port AS port, @@datadir AS datadir, @@server_id AS serverId",
  );
  if (facts === undefined) throw new Error("the database did not describe the session");
  await pinSqlMode(ask, String(facts.mode));
  if (timeoutMs !== undefined) await limitSession(ask, timeoutMs);
  const galera = await isGalera(ask);
  return {
    server: [facts.host, facts.port, facts.datadir, facts.serverId].join("|"),
    killable: String(facts.id) === String(connection.threadId),
    galera,
  };
}

/** Removes the text-changing flags from the session's `sql_mode` and checks that they are gone. */
async function pinSqlMode(ask: Ask, mode: string): Promise<void> {
  const flags = mode.split(",").filter((f) => f !== "");
  if (!flags.some((f) => TEXT_CHANGING_MODES.has(f))) return;
  const kept = flags.filter((f) => !TEXT_CHANGING_MODES.has(f));
  // Names the server gave; checked, as they go into the statement's text.
  if (!kept.every((f) => /^[A-Z0-9_]+$/.test(f))) {
    throw new Error(`unexpected sql_mode from the database: ${mode}`);
  }
  await ask(`SET SESSION sql_mode = '${kept.join(",")}'`);
  const [now] = await ask("SELECT @@SESSION.sql_mode AS mode");
  const left = String(now?.mode)
    .split(",")
    .filter((f) => TEXT_CHANGING_MODES.has(f));
  if (left.length > 0) {
    throw new Error(
      `the database session kept sql_mode ${left.join(",")} after SET SESSION sql_mode: refusing to use it`,
    );
  }
}

/** errno of "Unknown system variable": MySQL has no wsrep_on, MariaDB no max_execution_time. */
const ER_UNKNOWN_SYSTEM_VARIABLE = 1193;

/**
 * Server-side limits so no connection holds locks for long: lock waits fail
 * (errno 1205, retried) before our own timeout; a session idle in a
 * transaction (a client cut off by a partition) is killed after twice the
 * limit; the server stops overlong statements. A variable the server lacks
 * (MySQL vs MariaDB) is skipped; any other failure fails the connection.
 */
async function limitSession(ask: Ask, timeoutMs: number): Promise<void> {
  const seconds = Math.max(1, Math.ceil(timeoutMs / 1000));
  const lockWait = Math.max(1, Math.floor(timeoutMs / 2000));
  const skip = (err: unknown) => {
    if ((err as { errno?: unknown }).errno !== ER_UNKNOWN_SYSTEM_VARIABLE) throw err;
  };
  await ask(`SET SESSION innodb_lock_wait_timeout = ${lockWait}`).catch(skip);
  await ask(
    `SET SESSION idle_transaction_timeout = ${2 * seconds}, max_statement_time = ${timeoutMs / 1000}`,
  ).catch(skip);
  await ask(`SET SESSION max_execution_time = ${timeoutMs}`).catch(skip);
}

/**
 * Whether the server is a Galera node; there, reads wait until the node has
 * applied every write committed cluster-wide (`wsrep_sync_wait = 1`), so a
 * session started through one node is found through another right after.
 */
async function isGalera(ask: Ask): Promise<boolean> {
  let on: unknown;
  try {
    [{ on } = { on: undefined }] = await ask("SELECT @@wsrep_on AS `on`");
  } catch (err) {
    if ((err as { errno?: unknown }).errno === ER_UNKNOWN_SYSTEM_VARIABLE) return false;
    throw err;
  }
  if (Number(on) !== 1) return false;
  await ask("SET SESSION wsrep_sync_wait = 1");
  return true;
}
