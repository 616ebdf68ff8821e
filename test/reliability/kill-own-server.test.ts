import { setTimeout as sleep } from "node:timers/promises";
import { sql } from "kysely";
import { type Connection, createConnection } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withSignal } from "../../src/db/cancel.js";
import { type DatabaseHandle, openDatabase } from "../../src/db/connect.js";
import { statementLimits } from "../../src/edge/call-limits.js";
import { testServerUrl, testStore } from "../support/database.js";
import { RoundRobinProxy } from "../support/round-robin-proxy.js";
import { startTwinServers, throwawayUnavailable } from "../support/throwaway-mariadb.js";

// Thread ids are per server: behind a balancer over two servers, a KILL for
// a statement must reach that statement's own server, or it ends another
// client's statement or session (same id, other server) and leaves its own
// running. Two throwaway servers that look the same from SQL (host name, port,
// data directory, server_id: one config in two mount namespaces, on 127.0.0.1
// and 127.0.0.2), so nothing a server says of itself tells them apart, and
// their thread ids overlap.

const PORT = 13422;
const HOSTS = ["127.0.0.1", "127.0.0.2"];
const POOL = 4;
/** How long a stopped statement may take to leave PROCESSLIST: generous, for a loaded box. */
const GONE_WITHIN_MS = 3000;

const unavailable = testStore() === "mysql" ? throwawayUnavailable() : "the MySQL run only";

interface Bystander {
  host: string;
  connection: Connection;
  id: number;
}

describe.skipIf(unavailable !== undefined)("a KILL reaches only its own server", () => {
  let urls: string[];
  let stopServers: () => Promise<void>;
  let proxy: RoundRobinProxy;
  let bystanders: Bystander[];
  let handle: ReturnType<typeof openDatabase>;
  /** Each pool connection's server (its bind address) and thread id. */
  let poolSessions: { host: string; id: number }[];

  beforeAll(async () => {
    const started = await startTwinServers("kill", PORT);
    stopServers = started.stop;
    urls = started.servers.map((s) => s.url);
    for (const url of urls) {
      const c = await createConnection({ uri: url });
      await c.query("CREATE DATABASE IF NOT EXISTS killtest");
      await c.end();
    }
    // Another client's sessions on the second server, opened first: their ids
    // are those the first server gives the service's connections next.
    bystanders = [];
    for (let i = 0; i < 12; i++) {
      const connection = await createConnection({ uri: `${urls[1]}killtest` });
      bystanders.push({ host: HOSTS[1] as string, connection, id: connection.threadId });
    }
    proxy = new RoundRobinProxy(HOSTS.map((host) => ({ host, port: PORT })));
    await proxy.start();
    handle = openDatabase({
      url: `mysql://root@127.0.0.1:${proxy.port}/killtest`,
      poolSize: POOL,
      connectTimeoutMs: 2000,
      limits: statementLimits(2500),
    });
    // Every pool connection open at once: they alternate between the servers.
    const held = await Promise.all(
      Array.from({ length: POOL }, () =>
        sql<{
          id: number;
          host: string;
        }>`SELECT SLEEP(0.3) AS s, CONNECTION_ID() AS id, @@bind_address AS host`
          .execute(handle.db)
          .then((r) => r.rows[0] as { id: number; host: string }),
      ),
    );
    poolSessions = held.map((r) => ({ host: String(r.host), id: Number(r.id) }));
  }, 120_000);

  afterAll(async () => {
    for (const b of bystanders ?? []) b.connection.destroy();
    await handle?.close();
    await proxy?.close();
    await stopServers?.();
  });

  it("the servers describe themselves alike; the service's connections are on both, some with the id of another client's session", async () => {
    const described: unknown[] = [];
    for (const url of urls) {
      const c = await createConnection({ uri: url });
      const [rows] = await c.query(
        "SELECT @@hostname AS host, @@port AS port, @@datadir AS datadir, @@server_id AS id, @@server_uid AS uid",
      );
      await c.end();
      described.push((rows as unknown[])[0]);
    }
    expect(described[0]).toEqual(described[1]);
    expect(new Set(poolSessions.map((s) => s.host))).toEqual(new Set(HOSTS));
    const onFirst = poolSessions.filter((s) => s.host === HOSTS[0]).map((s) => s.id);
    expect(bystanders.some((b) => onFirst.includes(b.id))).toBe(true);
  });

  it("callers hanging up: each statement is gone from its own server, and no other client's statement is ended", async () => {
    const watching = bystanders.map((b) => b.connection.query("SELECT SLEEP(6) AS s"));
    await sleep(200);
    const calls = Array.from({ length: POOL }, (_, n) => {
      const caller = new AbortController();
      const db = withSignal(handle.db, caller.signal);
      const done = sql.raw(`SELECT SLEEP(20) /* hangup-${n} */`).execute(db);
      setTimeout(() => caller.abort(new Error("the caller left")), 500);
      return done.then(
        () => "finished",
        (err: unknown) => String((err as Error).message),
      );
    });
    expect(await Promise.all(calls)).toEqual(Array(POOL).fill("the caller left"));
    await expectGone(urls, "hangup-");
    await expectUntouched(bystanders, watching);
  }, 30_000);

  it("statements past their limit: each session is ended on its own server, and no other client's session is", async () => {
    const watching = bystanders.map((b) => b.connection.query("SELECT SLEEP(6) AS s"));
    await sleep(200);
    const calls = Array.from({ length: POOL }, (_, n) =>
      sql
        .raw(`SELECT SLEEP(20) /* overlong-${n} */`)
        .execute(handle.db)
        .then(
          () => "finished",
          (err: unknown) => String((err as { code?: unknown }).code),
        ),
    );
    expect(await Promise.all(calls)).toEqual(Array(POOL).fill("PROTOCOL_SEQUENCE_TIMEOUT"));
    await expectGone(urls, "overlong-");
    await expectUntouched(bystanders, watching);
  }, 30_000);

  it("a KILL connection on the other server, where the statement's thread id is another client's, sends nothing: the call's own connection closes and the server's limit ends the statement", async () => {
    const { routed, alone } = await poolOnSecondServer();
    let twin: Connection | undefined;
    try {
      const { rows } = await sql<{ id: number }>`SELECT CONNECTION_ID() AS id`.execute(alone.db);
      // Every later connection (a KILL connection looked for) on the first server, alike.
      routed.targets = [{ host: HOSTS[0] as string, port: PORT }];
      // Another client's session with that thread id on the first server, running a statement.
      twin = await sessionWithId(`${urls[0]}killtest`, Number(rows[0]?.id));
      const watching = twin.query("SELECT SLEEP(5) AS s").then(
        ([rows]) => rows,
        (err: { code?: unknown }) => err.code,
      );
      const { outcome, ms } = await callerLeaves(alone, "unconfirmed");
      expect(outcome).toBe("the caller left");
      // A few looks, not the statement's limit (generous, for a loaded box).
      expect(ms).toBeLessThan(1900);
      // max_statement_time, set per session (2 s here), ends it on its server.
      await expectGone([urls[1] as string], "unconfirmed", 4000);
      expect(await watching).toEqual([{ s: 0 }]);
    } finally {
      twin?.destroy();
      await alone.close();
      await routed.close();
    }
  }, 20_000);

  it("when no KILL connection reaches a server that looks like the statement's, the call's own connection closes at once and the server's limit ends the statement", async () => {
    const { routed, alone } = await poolOnSecondServer();
    try {
      await sql`SELECT 1`.execute(alone.db);
      // Every later connection on the tests' own server, which describes itself otherwise.
      const other = new URL(testServerUrl());
      routed.targets = [{ host: other.hostname, port: Number(other.port || 3306) }];
      const { outcome, ms } = await callerLeaves(alone, "unreachable");
      expect(outcome).toBe("the caller left");
      // Answered without waiting for the statement (generous, for a loaded box).
      expect(ms).toBeLessThan(1500);
      await expectGone([urls[1] as string], "unreachable", 4000);
    } finally {
      await alone.close();
      await routed.close();
    }
  });
});

/** A pool of one connection, which goes to the second server: later ones go where `routed` says. */
async function poolOnSecondServer() {
  const routed = new RoundRobinProxy([{ host: HOSTS[1] as string, port: PORT }]);
  await routed.start();
  const alone = openDatabase({
    url: `mysql://root@127.0.0.1:${routed.port}/killtest`,
    poolSize: 1,
    connectTimeoutMs: 2000,
    limits: statementLimits(2000),
  });
  return { routed, alone };
}

/** A 20 s statement marked `marker` whose caller leaves after 300 ms: how it ended, and when. */
async function callerLeaves(handle: DatabaseHandle, marker: string) {
  const caller = new AbortController();
  const started = performance.now();
  setTimeout(() => caller.abort(new Error("the caller left")), 300);
  const outcome = await sql
    .raw(`SELECT SLEEP(20) /* ${marker} */`)
    .execute(withSignal(handle.db, caller.signal))
    .then(
      () => "finished",
      (err: unknown) => String((err as Error).message),
    );
  return { outcome, ms: performance.now() - started };
}

/** A new session on `url` whose thread id is `id` (ids are handed out in turn). */
async function sessionWithId(url: string, id: number): Promise<Connection> {
  for (;;) {
    const c = await createConnection({ uri: url });
    if (c.threadId === id) return c;
    c.destroy();
    if (c.threadId > id) throw new Error(`thread id ${id} is past on ${url}`);
  }
}

/** No statement marked `marker` runs on any of the servers, within `withinMs`. */
async function expectGone(
  urls: string[],
  marker: string,
  withinMs = GONE_WITHIN_MS,
): Promise<void> {
  const deadline = Date.now() + withinMs;
  let running: unknown[] = [];
  do {
    running = [];
    for (const url of urls) {
      const c = await createConnection({ uri: url });
      const [rows] = await c.query(
        "SELECT ID, INFO FROM information_schema.PROCESSLIST WHERE INFO LIKE CONCAT('%', ?, '%') AND ID <> CONNECTION_ID()",
        [marker],
      );
      await c.end();
      running.push(...(rows as unknown[]));
    }
    if (running.length === 0) return;
    await sleep(100);
  } while (Date.now() < deadline);
  expect(running).toEqual([]);
}

/** Every bystander's SLEEP ran to its end (0: not interrupted) and its session is still open. */
async function expectUntouched(
  bystanders: Bystander[],
  watching: Promise<[unknown, unknown]>[],
): Promise<void> {
  const results = await Promise.all(
    watching.map((w) =>
      w.then(
        ([rows]) => Number((rows as { s: unknown }[])[0]?.s),
        (err: unknown) => String((err as { code?: unknown }).code),
      ),
    ),
  );
  expect(results).toEqual(Array(bystanders.length).fill(0));
  for (const b of bystanders) await expect(b.connection.query("SELECT 1")).resolves.toBeDefined();
}
