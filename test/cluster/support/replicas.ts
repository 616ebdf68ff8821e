import { randomBytes } from "node:crypto";
import type { AddressInfo } from "node:net";
import { sql } from "kysely";
import { pino } from "pino";
import { createAuthenticator } from "../../../src/auth/authenticator.js";
import { signToken } from "../../../src/auth/tokens.js";
import { createDatabaseIfMissing, dropDatabase, openDatabase } from "../../../src/db/connect.js";
import type { Db } from "../../../src/db/database.js";
import { migrateToLatest } from "../../../src/db/migrate.js";
import { ReplicaReads } from "../../../src/db/read-routing.js";
import { systemClock } from "../../../src/domain/clock.js";
import { servePort } from "../../../src/edge/one-port.js";
import { HealthMonitor } from "../../../src/ops/health.js";
import { buildApp } from "../../../src/server.js";
import { defaultAppSettings, defaultDatabaseLimits } from "../../support/settings.js";

const SECRET = "cluster-test-secret-cluster-test-secret";

/** One replica of the service, in this process, on its own database node. */
export interface ServiceReplica {
  name: string;
  baseUrl: string;
  /** The replica's own pool (through its node). */
  db: Db;
  /** Set when the replica routes reads to a replica database. */
  reads?: ReplicaReads;
  rest(user: string, method: string, path: string, body?: unknown): Promise<Reply>;
}

export interface Reply {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: JSON bodies of every shape
  body: any;
}

export interface Replicas {
  database: string;
  replicas: ServiceReplica[];
  /** Closes the replicas and drops the database. */
  close(): Promise<void>;
}

/** `mysql://…:port/` with the database `name`. */
export function withDatabase(serverUrl: string, name: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/**
 * A fresh database (made and migrated through `nodes[0]`), and one service
 * replica per entry of `nodes`, each with its own pool on that node (and,
 * with `readUrls`, reads routed to that replica server).
 */
export async function startReplicas(
  nodes: string[],
  options: {
    /** A read replica server URL (account included): replicas route reads there. */
    readUrl?: string;
    /** How many of the replicas, the first ones, route reads (default: all). */
    routed?: number;
    poolSize?: number;
  } = {},
): Promise<Replicas> {
  const [firstNode] = nodes;
  if (firstNode === undefined) throw new Error("no database node");
  const database = `practice_cluster_${randomBytes(5).toString("hex")}`;
  const first = withDatabase(firstNode, database);
  await createDatabaseIfMissing(first);
  const setup = openDatabase({
    url: first,
    poolSize: 2,
    connectTimeoutMs: 3000,
    limits: defaultDatabaseLimits(),
  });
  await migrateToLatest(setup.db);
  if (options.readUrl) {
    // The replica account may only read this database; the grant replicates.
    const reader = new URL(options.readUrl);
    await sql`GRANT SELECT ON ${sql.id(database)}.* TO ${sql.lit(decodeURIComponent(reader.username))}@'127.0.0.1'`.execute(
      setup.db,
    );
    // Wait until the replica has the grant (and the schema) before anyone reads there.
    const { rows } = await sql<{ p: string }>`SELECT @@gtid_binlog_pos AS p`.execute(setup.db);
    const replicaRoot = new URL(options.readUrl);
    replicaRoot.username = "root";
    replicaRoot.password = "";
    const replica = openDatabase({
      url: replicaRoot.toString(),
      poolSize: 1,
      connectTimeoutMs: 2000,
      limits: defaultDatabaseLimits(),
    });
    try {
      await sql`SELECT MASTER_GTID_WAIT(${rows[0]?.p ?? ""}, 30)`.execute(replica.db);
    } finally {
      await replica.close();
    }
  }
  await setup.close();

  const tokens = new Map<string, string>();
  const token = async (user: string) => {
    let t = tokens.get(user);
    if (t === undefined) {
      t = await signToken(SECRET, user, { now: new Date() });
      tokens.set(user, t);
    }
    return t;
  };
  const closers: (() => Promise<void>)[] = [];
  const replicas: ServiceReplica[] = [];
  for (const [i, node] of nodes.entries()) {
    const handle = openDatabase({
      url: withDatabase(node, database),
      poolSize: options.poolSize ?? 8,
      connectTimeoutMs: 2000,
      limits: defaultDatabaseLimits(),
    });
    let reads: ReplicaReads | undefined;
    let closeReads = async () => {};
    if (options.readUrl && i < (options.routed ?? nodes.length)) {
      const read = openDatabase({
        url: withDatabase(options.readUrl, database),
        poolSize: options.poolSize ?? 8,
        connectTimeoutMs: 2000,
        limits: defaultDatabaseLimits(),
      });
      reads = new ReplicaReads(handle.db, read.db);
      // What main.ts does at start-up: both ends must speak MariaDB's GTIDs.
      if (!(await reads.check())) throw new Error(`the read replica ${node} does not answer`);
      closeReads = read.close;
    }
    // As main.ts does: probes on a connection of their own.
    const health = new HealthMonitor(handle.db, { probe: handle.probe });
    const app = await buildApp({
      ...defaultAppSettings(),
      db: handle.db,
      pool: handle.pool,
      health,
      reads,
      clock: systemClock,
      authenticator: createAuthenticator({ secret: SECRET }, systemClock),
      logger: pino({ level: process.env.TEST_LOG_LEVEL ?? "silent" }),
    });
    const port = servePort(app);
    await port.listen(0, "127.0.0.1");
    const baseUrl = `http://127.0.0.1:${(port.server.address() as AddressInfo).port}`;
    closers.push(async () => {
      health.stop();
      await port.close(1000);
      await closeReads();
      await handle.close();
    });
    replicas.push({
      name: `replica${i + 1}@${new URL(node).port}`,
      baseUrl,
      db: handle.db,
      reads,
      async rest(user, method, path, body) {
        const headers: Record<string, string> = { authorization: `Bearer ${await token(user)}` };
        if (body !== undefined) headers["content-type"] = "application/json";
        const res = await fetch(`${baseUrl}${path}`, {
          method,
          headers,
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        const text = await res.text();
        return { status: res.status, body: text ? JSON.parse(text) : undefined };
      },
    });
  }
  return {
    database,
    replicas,
    async close() {
      for (const close of closers) await close();
      await dropDatabase(first);
    },
  };
}

/** `list[i]`, which must be there. */
export function nth<T>(list: readonly T[], i: number): T {
  const item = list[i];
  if (item === undefined) throw new Error(`no item ${i} in a list of ${list.length}`);
  return item;
}

/** Runs `round(i)` for i in 0..rounds-1, `parallel` rounds at a time. */
export async function inRounds(
  rounds: number,
  parallel: number,
  round: (i: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < rounds) await round(next++);
    }),
  );
}

/** p50/p95/max of durations in ms, for the report lines. */
export function timings(ms: number[]): string {
  const sorted = [...ms].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
  return `p50 ${at(0.5).toFixed(1)} ms, p95 ${at(0.95).toFixed(1)} ms, max ${at(1).toFixed(1)} ms`;
}
