import { type KillConnection, KillConnections, PER_SERVER } from "./kill-connections.js";
import type { PoolSettings } from "./mysql-pool.js";
import { findStatement } from "./statement-marker.js";

/** Longest a KILL connection's look-up, or its KILL, may take. */
const KILL_TIMEOUT_MS = 1000;

/** A statement to stop: where it runs, as its connection learnt when it opened. */
export interface StatementTarget {
  /** Its server's description (ServerSession.server). */
  server: string;
  threadId: number;
  /** The comment its text ends with (statement-marker.ts). */
  marker: string;
  /** Whether to open another KILL connection when the ones kept do not see it. */
  lookFurther: boolean;
}

/**
 * What `stop` did: KILLed the statement; saw it on no KILL connection to a server described
 * as its own (not there yet, done, or on a server alike no KILL connection reaches), so sent
 * nothing; or found no KILL connection to such a server at all.
 */
export type StopOutcome = "stopped" | "not seen" | "unreachable";

/**
 * KILLs that land only on the statement they are for. A KILL connection first finds the
 * statement, by thread id and marker, among the threads of the server it talks to, and stops
 * it by its QUERY_ID (MariaDB; an id no later statement gets) or, on MySQL, its thread
 * (answered only once no KILL is on its way, stoppable-mysql.ts, so nothing runs there after
 * it meanwhile); a connection that does not find it sends nothing.
 */
export class StatementKiller {
  private readonly connections: KillConnections;

  constructor(settings: PoolSettings) {
    this.connections = new KillConnections(settings);
  }

  async stop(target: StatementTarget): Promise<StopOutcome> {
    const known = this.connections.to(target.server);
    for (const k of known) if (await this.stopOn(target, k)) return "stopped";
    if (known.length > 0 && (!target.lookFurther || known.length >= PER_SERVER)) {
      return "not seen";
    }
    const another = await this.connections.reach(target.server);
    if (another === undefined) return known.length > 0 ? "not seen" : "unreachable";
    return (await this.stopOn(target, another)) ? "stopped" : "not seen";
  }

  close(): Promise<void> {
    return this.connections.close();
  }

  /** Finds the statement on `k`'s server and KILLs it there; false if it does not run there. */
  private async stopOn(target: StatementTarget, k: KillConnection): Promise<boolean> {
    const ask = (sql: string) =>
      new Promise<{ id: unknown }[]>((resolve, reject) =>
        k.connection.query({ sql, timeout: KILL_TIMEOUT_MS }, (err, rows) =>
          err ? reject(err) : resolve(rows as { id: unknown }[]),
        ),
      );
    try {
      const [found] = await ask(findStatement(target.threadId, target.marker, k.queryIds));
      const id = Number(found?.id);
      if (!Number.isSafeInteger(id)) return false;
      await ask(k.queryIds ? `KILL QUERY ID ${id}` : `KILL QUERY ${target.threadId}`);
      return true;
    } catch (err) {
      // Ended between the look-up and the KILL: the connection is still usable.
      const errno = (err as { errno?: unknown }).errno;
      if (errno === ER_NO_SUCH_QUERY || errno === ER_NO_SUCH_THREAD) return false;
      this.connections.drop(target.server, k);
      throw err;
    }
  }
}

/** errno of "Unknown thread id" and of "Unknown query id". */
const ER_NO_SUCH_THREAD = 1094;
const ER_NO_SUCH_QUERY = 1957;
