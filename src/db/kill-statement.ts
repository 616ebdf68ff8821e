import type { Pool, PoolConnection } from "mysql2";
import { mysqlPool, type PoolSettings } from "./mysql-pool.js";
import { prepareSession } from "./mysql-session.js";

/** Longest a KILL may take before the statement it stops is cut off with its connection. */
const KILL_TIMEOUT_MS = 1000;
/** New connections tried to reach a server no KILL connection talks to yet (a balancer spreads them). */
const REACH_ATTEMPTS = 4;
/** Servers with a KILL connection kept at once. */
const MAX_SERVERS = 8;

interface Killer {
  pool: Pool;
  connection: PoolConnection;
}

/**
 * KILLs sent only on a connection to the server the thread id belongs to (ids are per server):
 * one kept per server, found through the same URL. `kill` resolves false when none reaches it.
 */
export class StatementKiller {
  private readonly killers = new Map<string, Killer>();
  private readonly reaching = new Map<string, Promise<Killer | undefined>>();
  private closed = false;

  constructor(private readonly settings: PoolSettings) {}

  async kill(server: string, statement: string): Promise<boolean> {
    const killer = await this.reach(server);
    if (killer === undefined) return false;
    try {
      await new Promise<void>((resolve, reject) =>
        killer.connection.query({ sql: statement, timeout: KILL_TIMEOUT_MS }, (err) =>
          err ? reject(err) : resolve(),
        ),
      );
      return true;
    } catch (err) {
      // A KILL of a session already gone (errno 1094) still leaves this connection usable.
      if ((err as { errno?: unknown }).errno === ER_NO_SUCH_THREAD) return true;
      this.drop(server, killer);
      throw err;
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.reaching.values()]);
    const killers = [...this.killers.entries()];
    this.killers.clear();
    await Promise.all(killers.map(([server, k]) => this.end(server, k)));
  }

  private reach(server: string): Promise<Killer | undefined> {
    const known = this.killers.get(server);
    if (known !== undefined) return Promise.resolve(known);
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
      let connection: PoolConnection | undefined;
      let reached: string;
      try {
        connection = await new Promise<PoolConnection>((resolve, reject) =>
          pool.getConnection((err, c) => (err ? reject(err) : resolve(c))),
        );
        reached = (await prepareSession(connection, this.settings.connectTimeoutMs)).server;
      } catch {
        connection?.destroy();
        await endPool(pool);
        return undefined;
      }
      const killer = { pool, connection };
      connection.on("error", () => this.drop(reached, killer));
      if (!this.closed && !this.killers.has(reached) && this.killers.size < MAX_SERVERS) {
        this.killers.set(reached, killer);
      } else {
        await endPool(pool);
      }
      if (reached === server) return this.killers.get(server);
    }
    return undefined;
  }

  private drop(server: string, killer: Killer): void {
    if (this.killers.get(server) === killer) this.killers.delete(server);
    killer.connection.destroy();
    void endPool(killer.pool);
  }

  private async end(server: string, killer: Killer): Promise<void> {
    if (this.killers.get(server) === killer) this.killers.delete(server);
    killer.connection.release();
    await endPool(killer.pool);
  }
}

/** errno of "Unknown thread id". */
const ER_NO_SUCH_THREAD = 1094;

function endPool(pool: Pool): Promise<void> {
  return new Promise((resolve) => pool.end(() => resolve()));
}
