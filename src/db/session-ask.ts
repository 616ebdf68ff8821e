import type { Connection } from "mysql2";

/** One statement of the service's own (no values) on a connection being readied. */
export type Ask = <T = Record<string, unknown>[]>(statement: string) => Promise<T>;

/**
 * `connection`'s statements, each answered by `deadline` (epoch ms) or failed
 * as mysql2 fails a statement past its timeout: a set-up has one budget for
 * all its statements, so a slow server cannot stretch it statement by statement.
 */
export function asker(connection: Pick<Connection, "query">, deadline: number): Ask {
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
