import type { Pool, PoolConnection } from "mysql2";
import { mysqlPool, type PoolSettings } from "./mysql-pool.js";
import { prepareSession } from "./mysql-session.js";
import { findStatement } from "./statement-marker.js";

/** Longest a KILL connection's look-up, or its KILL, may take. */
const KILL_TIMEOUT_MS = 1000;
/** New connections tried to reach a server no KILL connection talks to yet (a balancer spreads them). */
const REACH_ATTEMPTS = 4;
/** KILL connections kept at once, over every server. */
const MAX_KILLERS = 8;
/** KILL connections kept for one description of a server: servers that look alike share one. */
const PER_SERVER = 3;

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

interface Killer {
  pool: Pool;
  connection: PoolConnection;
  /** Whether its server stops one statement by its id (KILL QUERY ID: MariaDB). */
  queryIds: boolean;
}

/**
 * KILLs that land only on the statement they are for. A KILL connection first finds the
 * statement, by thread id and marker, among the threads of the server it talks to, and stops
 * it by its QUERY_ID (MariaDB; an id no later statement gets) or, on MySQL, its thread
 * (answered only once no KILL is on its way, stoppable-mysql.ts, so nothing runs there after
 * it meanwhile); a connection that does not find it sends nothing. KILL connections are kept
 * by how their server describes itself, found through the same URL (a balancer spreads them).
 */
export class StatementKiller {
  private readonly killers = new Map<string, Killer[]>();
  private readonly reaching = new Map<string, Promise<Killer | undefined>>();
  private closed = false;

  constructor(private readonly settings: PoolSettings) {}

  async stop(target: StatementTarget): Promise<StopOutcome> {
    const known = this.killers.get(target.server) ?? [];
    for (const killer of known) if (await this.stopOn(target, killer)) return "stopped";
    if (known.length > 0 && (!target.lookFurther || known.length >= PER_SERVER)) {
      return "not seen";
    }
    const another = await this.reach(target.server);
    if (another === undefined) return known.length > 0 ? "not seen" : "unreachable";
    return (await this.stopOn(target, another)) ? "stopped" : "not seen";
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.reaching.values()]);
    const killers = [...this.killers.values()].flat();
    this.killers.clear();
    await Promise.all(killers.map(end));
  }

  /** Finds the statement on `killer`'s server and KILLs it there; false if it does not run there. */
  private async stopOn(target: StatementTarget, killer: Killer): Promise<boolean> {
    const ask = (sql: string) =>
      new Promise<{ id: unknown }[]>((resolve, reject) =>
        killer.connection.query({ sql, timeout: KILL_TIMEOUT_MS }, (err, rows) =>
          err ? reject(err) : resolve(rows as { id: unknown }[]),
        ),
      );
    try {
      const [found] = await ask(findStatement(target.threadId, target.marker, killer.queryIds));
      const id = Number(found?.id);
      if (!Number.isSafeInteger(id)) return false;
      await ask(killer.queryIds ? `KILL QUERY ID ${id}` : `KILL QUERY ${target.threadId}`);
      return true;
    } catch (err) {
      // Ended between the look-up and the KILL: the connection is still usable.
      const errno = (err as { errno?: unknown }).errno;
      if (errno === ER_NO_SUCH_QUERY || errno === ER_NO_SUCH_THREAD) return false;
      this.drop(target.server, killer);
      throw err;
    }
  }

  /** Another KILL connection to a server described as `server`, one search at a time. */
  private reach(server: string): Promise<Killer | undefined> {
    let reaching = this.reaching.get(server);
    if (reaching === undefined) {
      reaching = this.search(server).finally(() => this.reaching.delete(server));
      this.reaching.set(server, reaching);
    }
    return reaching;
  }

  private async search(server: string): Promise<Killer | undefined> {
    for (let attempt = 0; attempt < REACH_ATTEMPTS && !this.closed; attempt++) {
      const pool = mysqlPool(this.settings, 1);
      let killer: Killer;
      let reached: string;
      try {
        const connection = await new Promise<PoolConnection>((resolve, reject) =>
          pool.getConnection((err, c) => (err ? reject(err) : resolve(c))),
        );
        const session = await prepareSession(connection, this.settings.connectTimeoutMs).catch(
          (err: unknown) => {
            connection.destroy();
            throw err;
          },
        );
        killer = { pool, connection, queryIds: session.queryIds };
        reached = session.server;
      } catch {
        await endPool(pool);
        return undefined;
      }
      if (!this.keep(reached, killer)) {
        await end(killer);
        continue;
      }
      killer.connection.on("error", () => this.drop(reached, killer));
      if (reached === server) return killer;
    }
    return undefined;
  }

  /** Keeps `killer` for `server`, if there is room. */
  private keep(server: string, killer: Killer): boolean {
    const kept = this.killers.get(server) ?? [];
    const all = [...this.killers.values()].reduce((n, ks) => n + ks.length, 0);
    if (this.closed || kept.length >= PER_SERVER || all >= MAX_KILLERS) return false;
    this.killers.set(server, [...kept, killer]);
    return true;
  }

  private drop(server: string, killer: Killer): void {
    const kept = (this.killers.get(server) ?? []).filter((k) => k !== killer);
    if (kept.length > 0) this.killers.set(server, kept);
    else this.killers.delete(server);
    killer.connection.destroy();
    void endPool(killer.pool);
  }
}

/** errno of "Unknown thread id" and of "Unknown query id". */
const ER_NO_SUCH_THREAD = 1094;
const ER_NO_SUCH_QUERY = 1957;

async function end(killer: Killer): Promise<void> {
  killer.connection.release();
  await endPool(killer.pool);
}

function endPool(pool: Pool): Promise<void> {
  return new Promise((resolve) => pool.end(() => resolve()));
}
