import type { Pool, PoolConnection } from "mysql2";
import { mysqlPool, type PoolSettings } from "./mysql-pool.js";
import { prepareSession } from "./mysql-session.js";

/** New connections tried to reach a server no KILL connection talks to yet (a balancer spreads them). */
const REACH_ATTEMPTS = 4;
/** KILL connections kept at once, over every server. */
const MAX_KEPT = 8;
/** KILL connections kept for one description of a server: servers that look alike share one. */
export const PER_SERVER = 3;

/** A connection of its own that sends KILLs to one server. */
export interface KillConnection {
  pool: Pool;
  connection: PoolConnection;
  /** Whether its server stops one statement by its id (KILL QUERY ID: MariaDB). */
  queryIds: boolean;
}

/**
 * KILL connections, kept by how their server describes itself (several for servers alike),
 * found by opening connections through the same URL (a balancer spreads them).
 */
export class KillConnections {
  private readonly kept = new Map<string, KillConnection[]>();
  private readonly reaching = new Map<string, Promise<KillConnection | undefined>>();
  private closed = false;

  constructor(private readonly settings: PoolSettings) {}

  /** Those kept for servers described as `server`. */
  to(server: string): readonly KillConnection[] {
    return this.kept.get(server) ?? [];
  }

  /** Another one to a server described as `server`, kept; one search at a time. */
  reach(server: string): Promise<KillConnection | undefined> {
    let reaching = this.reaching.get(server);
    if (reaching === undefined) {
      reaching = this.search(server).finally(() => this.reaching.delete(server));
      this.reaching.set(server, reaching);
    }
    return reaching;
  }

  /** Closes one that failed. */
  drop(server: string, k: KillConnection): void {
    const left = this.to(server).filter((other) => other !== k);
    if (left.length > 0) this.kept.set(server, left);
    else this.kept.delete(server);
    k.connection.destroy();
    void endPool(k.pool);
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.reaching.values()]);
    const all = [...this.kept.values()].flat();
    this.kept.clear();
    await Promise.all(all.map(end));
  }

  private async search(server: string): Promise<KillConnection | undefined> {
    for (let attempt = 0; attempt < REACH_ATTEMPTS && !this.closed; attempt++) {
      const pool = mysqlPool(this.settings, 1);
      let k: KillConnection;
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
        k = { pool, connection, queryIds: session.queryIds };
        reached = session.server;
      } catch {
        await endPool(pool);
        return undefined;
      }
      if (!this.keep(reached, k)) {
        await end(k);
        continue;
      }
      k.connection.on("error", () => this.drop(reached, k));
      if (reached === server) return k;
    }
    return undefined;
  }

  /** Keeps `k` for `server`, if there is room. */
  private keep(server: string, k: KillConnection): boolean {
    const kept = this.to(server);
    const all = [...this.kept.values()].reduce((n, ks) => n + ks.length, 0);
    if (this.closed || kept.length >= PER_SERVER || all >= MAX_KEPT) return false;
    this.kept.set(server, [...kept, k]);
    return true;
  }
}

async function end(k: KillConnection): Promise<void> {
  k.connection.release();
  await endPool(k.pool);
}

function endPool(pool: Pool): Promise<void> {
  return new Promise((resolve) => pool.end(() => resolve()));
}
