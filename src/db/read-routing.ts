import { sql } from "kysely";
import type { Db } from "./database.js";
import { isDatabaseUnavailable } from "./errors.js";

/**
 * Where a read runs: on the primary, or on a read replica that has caught
 * up with it. Only reads that may be served by a replica go through here
 * (ListSessions, GetSession, GetQuiz); writes and the reads inside a write's
 * transaction always run on the primary.
 */
export interface ReadRouting {
  /** Runs `read` on a database that has every write committed before this call. */
  read<T>(read: (db: Db) => Promise<T>): Promise<T>;
}

/** Every read on the primary: no read replica configured. */
export function primaryReads(primary: Db): ReadRouting {
  return { read: (read) => read(primary) };
}

/** How long a read waits for the replica to catch up before going to the primary. */
export const REPLICA_WAIT_MS = 100;

/** Where routed reads ran, since start: for tests and the docs' figures. */
export interface ReplicaReadStats {
  replica: number;
  /** The replica had not caught up within the wait. */
  primaryAfterWait: number;
  /** The replica failed (down, replication broken): the read went to the primary. */
  primaryAfterError: number;
}

/**
 * Reads on an async MariaDB replica with read-your-writes: before each read,
 * the primary's binlog position (`@@gtid_binlog_pos`, one tiny query) is
 * read, and on one replica connection `MASTER_GTID_WAIT(position, timeout)`
 * waits until the replica has applied it; then the read runs on that same
 * connection. If the replica has not caught up within REPLICA_WAIT_MS, or
 * fails, the read runs on the primary.
 *
 * The position is the primary's, not the caller's last write (`@@last_gtid`
 * on the writing connection): a user's write may have gone through another
 * replica of the service, whose GTIDs this process never saw. The primary's
 * position covers every write committed before the read began, wherever it
 * was made, for the cost of one round trip that reads no table.
 *
 * The replica account must only be able to SELECT: an account that may
 * write (or has READ ONLY ADMIN, as root does) bypasses read_only, and a
 * write on the replica stops its replication.
 */
export class ReplicaReads implements ReadRouting {
  readonly stats: ReplicaReadStats = { replica: 0, primaryAfterWait: 0, primaryAfterError: 0 };

  constructor(
    private readonly primary: Db,
    private readonly replica: Db,
    private readonly waitMs = REPLICA_WAIT_MS,
  ) {}

  /**
   * Checks at start-up that both ends speak MariaDB's GTIDs (MySQL has other
   * functions for this), and throws with the reason if not. A replica that
   * does not answer is no reason to stay down (reads then go to the
   * primary): that returns false.
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
      // A failure of the read itself on a replica that had caught up is the
      // read's own (a bug, bad data): the primary would fail the same way.
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
