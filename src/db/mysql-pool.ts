import { createPool, type Pool } from "mysql2";

export interface PoolSettings {
  url: string;
  connectTimeoutMs: number;
}

/**
 * Prepared statements kept per connection (mysql2's cache, closed on the
 * server when evicted). Values go to the server apart from the text, so
 * each statement text is prepared once per connection; mysql2 sizes its cache
 * up front (its default, 16,000, costs about 2 ms per connection opened), and
 * the server caps statements for all its clients (`max_prepared_stmt_count`).
 */
const PREPARED_STATEMENTS = 64;

/**
 * A mysql2 pool. Every connection the service opens comes from one, even a
 * single one (KILLs, probe, set-up): mysql2's packet handling then sees one
 * class of connection and stays fast (its property reads turn generic, and
 * slower, once they have seen five shapes of connection). Times in UTC and
 * BIGINTs as strings, so no time zone or precision leaks in.
 */
export function mysqlPool(
  settings: PoolSettings,
  connectionLimit: number,
  multipleStatements = false,
): Pool {
  return createPool({
    maxPreparedStatements: PREPARED_STATEMENTS,
    multipleStatements,
    uri: settings.url,
    connectionLimit,
    connectTimeout: settings.connectTimeoutMs,
    timezone: "Z",
    supportBigNumbers: true,
    bigNumberStrings: true,
    enableKeepAlive: true,
    // Fail fast rather than queue without bound when the database is slow.
    queueLimit: connectionLimit * 100,
  });
}
