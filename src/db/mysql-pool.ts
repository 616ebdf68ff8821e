import { createPool, type Pool, type PoolOptions } from "mysql2";
import { inlineValues } from "./inline-values.js";

export interface PoolSettings {
  url: string;
  connectTimeoutMs: number;
}

/**
 * mysql2 sizes each connection's prepared-statement cache up front (16,000 slots by default:
 * about 2 ms of CPU per connection opened); the service prepares nothing.
 */
const PREPARED_STATEMENTS = 1;

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
    queryFormat,
  });
}

/**
 * mysql2's formatting of a statement's values, as inline-values.ts writes them. Statements reach
 * mysql2 with their values already in the text, and mysql2's own `format` would scan every text,
 * values and all, for placeholders again (some 40k instructions of a page's statement).
 */
const queryFormat: PoolOptions["queryFormat"] = (sql: string, values: unknown) =>
  Array.isArray(values) && values.length > 0 ? inlineValues(sql, values) : sql;
