/**
 * What a mysql2 error means for the caller. mysql2 errors carry `code`
 * (a string such as "ER_DUP_ENTRY" or "ECONNREFUSED") and, for server errors,
 * `errno` and `sqlMessage`.
 */
interface MysqlError {
  code?: string;
  errno?: number;
  sqlMessage?: string;
  fatal?: boolean;
}

function asMysqlError(err: unknown): MysqlError {
  return typeof err === "object" && err !== null ? (err as MysqlError) : {};
}

/**
 * Whether `err` is a duplicate entry on the unique key `key`. MySQL 8.0.19+
 * and TiDB name the key with its table ("practice_sessions.one_active_session"),
 * MariaDB without it.
 */
export function isDuplicateKey(err: unknown, key: string): boolean {
  const { errno, sqlMessage = "" } = asMysqlError(err);
  return errno === 1062 && new RegExp(`'(?:\\w+\\.)?${key}'`).test(sqlMessage);
}

/** Deadlock or lock wait timeout: the transaction was rolled back; running it again is safe. */
export function isTransientConflict(err: unknown): boolean {
  const { errno } = asMysqlError(err);
  return errno === 1213 || errno === 1205;
}

const UNREACHABLE = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
  "PROTOCOL_CONNECTION_LOST",
  "PROTOCOL_SEQUENCE_TIMEOUT",
  "ER_CON_COUNT_ERROR",
  "ER_SERVER_SHUTDOWN",
  "ER_ACCESS_DENIED_ERROR",
  "ER_BAD_DB_ERROR",
  "ER_QUERY_INTERRUPTED",
  "ER_LOCK_WAIT_TIMEOUT",
  "ER_LOCK_DEADLOCK",
]);

/**
 * Whether `err` says the database cannot serve now (down, unreachable, out of
 * connections, shutting down, or still in conflict after retries): the
 * caller should get `unavailable` and may retry.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  const e = asMysqlError(err);
  if (e.code !== undefined && UNREACHABLE.has(e.code)) return true;
  if (e.fatal === true) return true;
  const message = err instanceof Error ? err.message : "";
  // mysql2's pool and Kysely's driver say these in plain messages.
  return /Queue limit reached|Pool is closed|connect ETIMEDOUT|Can't add new command when connection is in closed state/i.test(
    message,
  );
}

/** A foreign key's parent row is missing (errno 1452), e.g. a question deleted meanwhile. */
export function isForeignKeyViolation(err: unknown): boolean {
  return asMysqlError(err).errno === 1452;
}
