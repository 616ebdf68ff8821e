import { sql } from "kysely";
import { withSignal } from "./cancel.js";
import type { Db } from "./database.js";
import { isDatabaseUnavailable } from "./errors.js";

/**
 * Where a read runs: the primary, or a read replica that has caught up with
 * it. Writes and reads inside a write's transaction always use the primary.
 */
export interface ReadRouting {
  /** Runs `read` on a database that has every write committed before this call. */
  read<T>(read: (db: Db) => Promise<T>): Promise<T>;
  /** The same routing, its statements stopped when `signal` aborts (cancel.ts). */
  forCall(signal: AbortSignal | undefined): ReadRouting;
}

/** Every read on the primary: no read replica configured. */
export function primaryReads(primary: Db): ReadRouting {
  return {
    read: (read) => read(primary),
    forCall: (signal) => primaryReads(withSignal(primary, signal)),
  };
}

/** How long a read waits for the replica to catch up before going to the primary. */
const REPLICA_WAIT_MS = 100;

/** Where routed reads ran, since start. */
export interface ReplicaReadStats {
  replica: number;
  /** The replica had not caught up within the wait. */
  primaryAfterWait: number;
  /** The replica failed (down, replication broken): the read went to the primary. */
  primaryAfterError: number;
}

/**
 * Read-your-writes on an async MariaDB replica: each read waits on a replica
 * connection (`MASTER_GTID_WAIT`) for the primary's current `@@gtid_binlog_pos`,
 * then runs there; after REPLICA_WAIT_MS or a replica failure it runs on the
 * primary. The primary's position, not this process's last GTID, because the
 * user's write may have gone through another instance of the service.
 * The replica account must only SELECT: a write on the replica stops replication.
 */
export class ReplicaReads implements ReadRouting {
  constructor(
    private readonly primary: Db,
    private readonly replica: Db,
    private readonly waitMs = REPLICA_WAIT_MS,
    readonly stats: ReplicaReadStats = { replica: 0, primaryAfterWait: 0, primaryAfterError: 0 },
  ) {}

  forCall(signal: AbortSignal | undefined): ReadRouting {
    if (signal === undefined) return this;
    const { primary, replica, waitMs, stats } = this;
    return new ReplicaReads(
      withSignal(primary, signal),
      withSignal(replica, signal),
      waitMs,
      stats,
    );
  }

  /**
   * Throws unless both ends speak MariaDB's GTIDs; false if the replica does
   * not answer (reads then go to the primary, no reason to stay down).
   */
  async check(): Promise<boolean> {
    try {
      const position = await primaryPosition(this.primary);
      await sql`SELECT MASTER_GTID_WAIT(${position}, 0)`.execute(this.replica);
      return true;
    } catch (err) {
      if (isDatabaseUnavailable(err)) return false;
      throw new Error(
        "DATABASE_READ_URL needs a MariaDB primary and replica with GTIDs (@@gtid_binlog_pos, MASTER_GTID_WAIT)",
        { cause: err },
      );
    }
  }

  async read<T>(read: (db: Db) => Promise<T>): Promise<T> {
    const position = await primaryPosition(this.primary);
    let caughtUp = false;
    try {
      const result = await this.replica.connection().execute(async (connection) => {
        caughtUp = await waitForPosition(connection, position, this.waitMs);
        return caughtUp ? { value: await read(connection) } : undefined;
      });
      if (result !== undefined) {
        this.stats.replica++;
        return result.value;
      }
      this.stats.primaryAfterWait++;
    } catch (err) {
      // A read that failed on a caught-up replica would fail on the primary too.
      if (caughtUp && !isDatabaseUnavailable(err)) throw err;
      this.stats.primaryAfterError++;
    }
    return read(this.primary);
  }
}

async function primaryPosition(primary: Db): Promise<string> {
  const { rows } = await sql<{
    position: string | null;
  }>`SELECT @@gtid_binlog_pos AS position`.execute(primary);
  return rows[0]?.position ?? "";
}

/** MASTER_GTID_WAIT: 0 once applied, -1 on timeout, NULL when it cannot wait. */
async function waitForPosition(replica: Db, position: string, waitMs: number): Promise<boolean> {
  if (position === "") return true;
  const { rows } = await sql<{
    applied: number | string | null;
  }>`SELECT MASTER_GTID_WAIT(${position}, ${waitMs / 1000}) AS applied`.execute(replica);
  return Number(rows[0]?.applied) === 0 && rows[0]?.applied !== null;
}
