import type { Connection } from "mysql2";
import { type Ask, asker } from "./session-ask.js";
import { CHARSET_FACTS, checkCharset, PIN_CHARSET } from "./session-charset.js";
import { pinSqlMode } from "./session-sql-mode.js";

/** What a connection learnt about its server when it was opened (see `prepareSession`). */
export interface ServerSession {
  /**
   * How the server this connection talks to describes itself (host name, port, data
   * directory, server id): where to look for its statements, not proof (servers alike).
   */
  server: string;
  /**
   * Whether the thread id the handshake gave is this session's on its server, by which a
   * KILL connection finds its statements (a proxy that answers the handshake itself, as
   * ProxySQL and MaxScale do, gives ids of its own).
   */
  killable: boolean;
  /** Whether the server stops one statement by its id (`KILL QUERY ID`: MariaDB, not MySQL). */
  queryIds: boolean;
  /** Whether the server is a Galera node. */
  galera: boolean;
}

/** A session's own limits (edge/call-limits.ts works them out; connect.ts `DatabaseLimits`). */
export interface SessionLimits {
  queryTimeoutMs: number;
  lockWaitSeconds: number;
  idleTransactionSeconds: number;
}

/**
 * Readies a new connection before its first use, or fails it: utf8mb4 (checked), `sql_mode`
 * without the flags that change what statements mean (checked; either refused with an
 * UnusableSession), the server's identity for KILLs, Galera or not (failing closed), limits.
 * All of it within `setupMs` (DB_CONNECT_TIMEOUT_MS: a hung or crawling server fails the
 * connection, not the caller's wait); `limits`, when given, are set as the session's own.
 */
export async function prepareSession(
  connection: Connection,
  setupMs: number,
  limits?: SessionLimits,
): Promise<ServerSession> {
  const ask = asker(connection, Date.now() + setupMs);
  await ask(PIN_CHARSET);
  const [facts] = await ask(
    `SELECT @@SESSION.sql_mode AS mode, CONNECTION_ID() AS id, @@hostname AS host, @@port AS port, @@datadir AS datadir, @@server_id AS serverId, VERSION() AS version, ${CHARSET_FACTS}`,
  );
  if (facts === undefined) throw new Error("the database did not describe the session");
  await checkCharset(ask, facts);
  await pinSqlMode(ask, String(facts.mode));
  if (limits !== undefined) await limitSession(ask, limits);
  const galera = await isGalera(ask);
  return {
    server: [facts.host, facts.port, facts.datadir, facts.serverId].join("|"),
    killable: String(facts.id) === String(connection.threadId),
    queryIds: /mariadb/i.test(String(facts.version)),
    galera,
  };
}

/** errno of "Unknown system variable": MySQL has no wsrep_on, MariaDB no max_execution_time. */
const ER_UNKNOWN_SYSTEM_VARIABLE = 1193;

/**
 * Server-side limits so no connection holds locks for long: lock waits, a
 * session idle in a transaction, overlong statements. A variable the server
 * lacks (MySQL vs MariaDB) is skipped; any other failure fails the connection.
 */
async function limitSession(ask: Ask, limits: SessionLimits): Promise<void> {
  const { queryTimeoutMs: timeoutMs, lockWaitSeconds, idleTransactionSeconds } = limits;
  const skip = (err: unknown) => {
    if ((err as { errno?: unknown }).errno !== ER_UNKNOWN_SYSTEM_VARIABLE) throw err;
  };
  await ask(`SET SESSION innodb_lock_wait_timeout = ${lockWaitSeconds}`).catch(skip);
  await ask(
    `SET SESSION idle_transaction_timeout = ${idleTransactionSeconds}, max_statement_time = ${timeoutMs / 1000}`,
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
