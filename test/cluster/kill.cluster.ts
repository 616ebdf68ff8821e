import { setTimeout as sleep } from "node:timers/promises";
import { sql } from "kysely";
import { type Connection, createConnection } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { withSignal } from "../../src/db/cancel.js";
import { openDatabase } from "../../src/db/connect.js";
import { statementLimits } from "../../src/edge/call-limits.js";
import { RoundRobinProxy } from "../support/round-robin-proxy.js";
import { waitForSynced } from "./support/mariadb-servers.js";
import { withDatabase } from "./support/replicas.js";

/**
 * The service's pool behind a TCP round-robin balancer over the three Galera
 * nodes (a virtual IP or an L4 load balancer): its connections, and those it
 * opens to send KILLs, land on any node, and thread ids repeat across nodes.
 * For DURATION_MS, callers hang up and statements run past their limit while
 * another client runs long statements on every node. Every stopped statement
 * must be gone from its own node's PROCESSLIST, and none of the other
 * client's statements or sessions may be ended, nor another call's (a KILL
 * sent to the wrong node ends whatever has that id there: often the
 * service's own connections, opened at the same pace on every node).
 */
const DURATION_MS = Number(process.env.CLUSTER_KILL_MS ?? 30_000);
/** Another client's sessions per node. */
const BYSTANDERS_PER_NODE = 6;
/** The service's calls at once. */
const PARALLEL = 4;
/** How long a stopped statement may take to leave PROCESSLIST: generous, for a loaded box. */
const GONE_WITHIN_MS = 3000;

const cluster = inject("cluster");
const DB = "practice_kill";

let proxy: RoundRobinProxy;
let handle: ReturnType<typeof openDatabase>;

beforeAll(async () => {
  // The suite before this one cuts a node off and lets it rejoin: start on a whole cluster.
  for (const node of cluster.galera) await waitForSynced(node, cluster.galera.length);
  const c = await createConnection({ uri: cluster.galera[0] as string });
  await c.query(`CREATE DATABASE IF NOT EXISTS ${DB}`);
  await c.end();
  proxy = new RoundRobinProxy(
    cluster.galera.map((url) => ({ host: "127.0.0.1", port: Number(new URL(url).port) })),
  );
  await proxy.start();
  handle = openDatabase({
    url: `mysql://root@127.0.0.1:${proxy.port}/${DB}`,
    poolSize: PARALLEL,
    connectTimeoutMs: 2000,
    limits: statementLimits(1500),
  });
});

afterAll(async () => {
  await handle?.close();
  await proxy?.close();
});

interface Bystander {
  node: string;
  connection: Connection;
  ended: string[];
  statements: number;
}

/** Another client: SLEEP(2) after SLEEP(2) on one node until `until`; what ended one early. */
async function bystander(node: string, until: number): Promise<Bystander> {
  const connection = await createConnection({ uri: withDatabase(node, DB) });
  const b: Bystander = { node, connection, ended: [], statements: 0 };
  void (async () => {
    while (Date.now() < until) {
      try {
        const [rows] = await connection.query("SELECT SLEEP(2) AS s /* bystander */");
        b.statements++;
        const s = Number((rows as { s: unknown }[])[0]?.s);
        if (s !== 0) b.ended.push("statement interrupted (SLEEP returned 1)");
      } catch (err) {
        b.ended.push(`session ended: ${String((err as { code?: unknown }).code)}`);
        return;
      }
    }
  })();
  return b;
}

/** Where a statement marked `marker` still runs, on any node. */
async function stillRunning(marker: string): Promise<string[]> {
  const found: string[] = [];
  for (const node of cluster.galera) {
    const c = await createConnection({ uri: node });
    const [rows] = await c.query(
      "SELECT ID FROM information_schema.PROCESSLIST WHERE INFO LIKE CONCAT('%', ?, '%') AND ID <> CONNECTION_ID()",
      [marker],
    );
    await c.end();
    for (const r of rows as { ID: number }[]) found.push(`${node} thread ${r.ID}`);
  }
  return found;
}

/** A call failed by its new connection's set-up statement running past its limit (mysql-session.ts). */
function setupTimedOut(err: unknown): boolean {
  const cause = (err as { cause?: { code?: unknown } }).cause;
  return (
    String((err as Error).message).startsWith("database session not ready:") &&
    cause?.code === "PROTOCOL_SEQUENCE_TIMEOUT"
  );
}

async function goneWithin(marker: string): Promise<string[]> {
  const deadline = Date.now() + GONE_WITHIN_MS;
  for (;;) {
    const left = await stillRunning(marker);
    if (left.length === 0 || Date.now() > deadline) return left;
    await sleep(100);
  }
}

describe("KILLs behind a round-robin balancer over the Galera nodes", () => {
  it(
    `for ${DURATION_MS / 1000} s: stopped statements end on their own node, and nobody else's does`,
    async () => {
      const until = Date.now() + DURATION_MS;
      const bystanders: Bystander[] = [];
      for (const node of cluster.galera) {
        for (let i = 0; i < BYSTANDERS_PER_NODE; i++) bystanders.push(await bystander(node, until));
      }
      let n = 0;
      const outcomes = {
        hungUp: 0,
        timedOut: 0,
        // A KILL QUERY that takes past the statement's limit (a KILL connection
        // to that node opened first, on a loaded box): the limit ends it instead.
        hungUpThenTimedOut: 0,
        // A new connection not readied within the connect limit (a node stalled
        // on a loaded box): the call fails before its statement is sent, whether
        // or not its caller left. A KILL landing on the set-up would end it with
        // an error of its own, counted as other.
        setupTimedOut: 0,
        leftRunning: [] as string[],
        other: [] as string[],
      };
      await Promise.all(
        Array.from({ length: PARALLEL }, async () => {
          while (Date.now() < until) {
            const call = n++;
            const hangUp = call % 2 === 0;
            const marker = `${hangUp ? "hangup" : "overlong"}-${call}-`;
            const caller = new AbortController();
            const db = hangUp ? withSignal(handle.db, caller.signal) : handle.db;
            const running = sql.raw(`SELECT SLEEP(20) /* ${marker} */`).execute(db);
            // A caller leaving after 100-400 ms; the others run into the 1.5 s limit.
            const timer = hangUp
              ? setTimeout(() => caller.abort(new Error("the caller left")), 100 + (call % 4) * 100)
              : undefined;
            const outcome = await running.then(
              () => "finished",
              (err: unknown) =>
                setupTimedOut(err)
                  ? "setup timed out"
                  : ((err as { code?: string }).code ?? (err as Error).message),
            );
            clearTimeout(timer);
            if (hangUp && outcome === "the caller left") outcomes.hungUp++;
            else if (!hangUp && outcome === "PROTOCOL_SEQUENCE_TIMEOUT") outcomes.timedOut++;
            else if (outcome === "PROTOCOL_SEQUENCE_TIMEOUT") outcomes.hungUpThenTimedOut++;
            else if (outcome === "setup timed out") outcomes.setupTimedOut++;
            else outcomes.other.push(`${marker}: ${outcome}`);
            outcomes.leftRunning.push(...(await goneWithin(marker)));
          }
        }),
      );
      // The bystanders' last statements end by themselves.
      await sleep(2500);
      const ended = bystanders.flatMap((b) => b.ended.map((e) => `${b.node}: ${e}`));
      const statements = bystanders.reduce((sum, b) => sum + b.statements, 0);
      console.log(
        `[kill] ${outcomes.hungUp} hang-ups (${outcomes.hungUpThenTimedOut} more ended by the limit first), ` +
          `${outcomes.timedOut} timeouts through the balancer, ${outcomes.setupTimedOut} new connections not ready in time; ` +
          `other client: ${statements} statements on ${bystanders.length} sessions, ${ended.length} ended; ` +
          `statements left running: ${outcomes.leftRunning.length}`,
      );
      for (const b of bystanders) await b.connection.end().catch(() => {});
      expect(outcomes.other).toEqual([]);
      expect(outcomes.leftRunning).toEqual([]);
      expect(ended).toEqual([]);
      expect(outcomes.hungUp).toBeGreaterThan(0);
      expect(outcomes.timedOut).toBeGreaterThan(0);
    },
    DURATION_MS + 120_000,
  );
});
