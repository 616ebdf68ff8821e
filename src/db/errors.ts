/** What a database error means for the caller, for mysql2 and better-sqlite3 errors alike. */
interface MysqlError {
  code?: string;
  errno?: number;
  sqlMessage?: string;
  fatal?: boolean;
}

function asMysqlError(err: unknown): MysqlError {
  return typeof err === "object" && err !== null ? (err as MysqlError) : {};
}

/** SQLite names the columns of a violated unique index, not the index. */
const SQLITE_UNIQUE_COLUMNS: Record<string, string> = {
  one_active_session:
    "practice_sessions.user_id, practice_sessions.quiz_id, practice_sessions.active",
  one_answer_per_question:
    "practice_session_answers.session_id, practice_session_answers.question_id",
};

/**
 * Whether `err` is a duplicate entry on the unique key `key`. MySQL 8.0.19+
 * and TiDB name the key with its table ("practice_sessions.one_active_session"),
 * MariaDB without it; SQLite names its columns.
 */
export function isDuplicateKey(err: unknown, key: string): boolean {
  const { errno, code, sqlMessage = "" } = asMysqlError(err);
  if (code === "SQLITE_CONSTRAINT_UNIQUE") {
    const columns = SQLITE_UNIQUE_COLUMNS[key];
    return columns !== undefined && (err as Error).message.endsWith(columns);
  }
  return errno === 1062 && new RegExp(`'(?:\\w+\\.)?${key}'`).test(sqlMessage);
}

/**
 * Deadlock, lock wait timeout, Galera certification failure (also errno 1213)
 * or a busy SQLite file: the transaction was rolled back and may run again.
 */
export function isTransientConflict(err: unknown): boolean {
  const { errno, code } = asMysqlError(err);
  return errno === 1213 || errno === 1205 || code === "SQLITE_BUSY" || code === "SQLITE_LOCKED";
}

/**
 * Server errors meaning "this node cannot serve now": 1047 Galera node outside
 * the primary component, 1927 connection killed, 1053 shutting down, 1290
 * read-only server, 1969 over max_statement_time.
 */
const UNAVAILABLE_ERRNOS = new Set([1047, 1053, 1290, 1927, 1969]);

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
  "SQLITE_BUSY",
  "SQLITE_LOCKED",
  "SQLITE_CANTOPEN",
  "SQLITE_FULL",
  "SQLITE_READONLY",
  "SQLITE_IOERR",
]);

/**
 * Whether `err` says the database cannot serve now (down, unreachable, full,
 * or still in conflict after retries): the caller gets `unavailable`.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  const e = asMysqlError(err);
  // SQLite extends codes with a reason: SQLITE_IOERR_WRITE is an SQLITE_IOERR.
  const code = e.code?.startsWith("SQLITE_IOERR") ? "SQLITE_IOERR" : e.code;
  if (code !== undefined && UNREACHABLE.has(code)) return true;
  if (e.errno !== undefined && UNAVAILABLE_ERRNOS.has(e.errno)) return true;
  if (e.fatal === true) return true;
  const message = err instanceof Error ? err.message : "";
  // mysql2's pool and Kysely's driver say these in plain messages.
  return /Queue limit reached|Pool is closed|connect ETIMEDOUT|Can't add new command when connection is in closed state|database connection is not open/i.test(
    message,
  );
}

/** A foreign key's parent row is missing (errno 1452), e.g. a question deleted meanwhile. */
function isForeignKeyViolation(err: unknown): boolean {
  const { errno, code } = asMysqlError(err);
  return errno === 1452 || code === "SQLITE_CONSTRAINT_FOREIGNKEY";
}

/**
 * A conditional write found its row changed since the transaction read it
 * (another answer committed meanwhile): nothing was written, and the caller
 * runs its transaction again.
 */
export class RowMoved extends Error {}

/** The unique key of one in-progress session per user and quiz. */
export const ONE_ACTIVE_SESSION_KEY = "one_active_session";
/** The unique key of one answer per question of a session. */
export const ONE_ANSWER_PER_QUESTION_KEY = "one_answer_per_question";
/** practice_question_memory's primary key (user, question). */
const QUESTION_MEMORY_KEY = "PRIMARY";

/**
 * Whether a write lost a race with another writer: a unique key taken meanwhile (on a cluster
 * row locks are not shared), a row that moved since it was read, or one it refers to deleted
 * meanwhile. Nothing was written; the use case runs again, reads what is there now and decides.
 */
export function isLostRace(err: unknown): boolean {
  return (
    err instanceof RowMoved ||
    isForeignKeyViolation(err) ||
    isDuplicateKey(err, ONE_ACTIVE_SESSION_KEY) ||
    isDuplicateKey(err, ONE_ANSWER_PER_QUESTION_KEY) ||
    isDuplicateKey(err, QUESTION_MEMORY_KEY)
  );
}
