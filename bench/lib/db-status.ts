import { createConnection } from "mysql2/promise";

/** The global counters a run reads before and after. */
export interface GlobalCounters {
  questions: number;
  handlerRead: number;
}

/**
 * Reads MariaDB's global `Questions` and the sum of `Handler_read_*` on a
 * connection of its own. Global counters include every client of the server
 * (other tests running on the box): use `CommandCountingProxy` for exact
 * round trips and compare, see bench/run/accounting.ts.
 */
export class StatusReader {
  private constructor(private readonly conn: Awaited<ReturnType<typeof createConnection>>) {}

  static async open(serverUrl: string): Promise<StatusReader> {
    return new StatusReader(await createConnection({ uri: serverUrl }));
  }

  async read(): Promise<GlobalCounters> {
    const [rows] = await this.conn.query(
      "SHOW GLOBAL STATUS WHERE Variable_name = 'Questions' OR Variable_name LIKE 'Handler_read%'",
    );
    let questions = 0;
    let handlerRead = 0;
    for (const r of rows as { Variable_name: string; Value: string }[]) {
      if (r.Variable_name === "Questions") questions = Number(r.Value);
      else handlerRead += Number(r.Value);
    }
    return { questions, handlerRead };
  }

  close(): Promise<void> {
    return this.conn.end();
  }
}
