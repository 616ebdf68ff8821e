import { setTimeout as sleep } from "node:timers/promises";
import { sql } from "kysely";
import { type Connection, createConnection } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withSignal } from "../../src/db/cancel.js";
import { openDatabase } from "../../src/db/connect.js";
import { testStore } from "../support/database.js";
import { RoundRobinProxy } from "../support/round-robin-proxy.js";
import { startThrowawayServers, throwawayUnavailable } from "../support/throwaway-mariadb.js";

// Thread ids are per server: behind a balancer over two servers, a KILL for
// a statement must reach that statement's own server, or it ends another
// client's statement or session (same id, other server) and leaves its own
// running. Two throwaway servers, so their thread ids overlap.

const PORTS = [13422, 13423];
const POOL = 4;
/** How long a stopped statement may take to leave PROCESSLIST: generous, for a loaded box. */
const GONE_WITHIN_MS = 3000;

const unavailable = testStore() === "mysql" ? throwawayUnavailable() : "the MySQL run only";

interface Bystander {
  port: number;
  connection: Connection;
  id: number;
}

describe.skipIf(unavailable !== undefined)("a KILL reaches only its own server", () => {
  let urls: string[];
  let stopServers: () => Promise<void>;
  let proxy: RoundRobinProxy;
  let bystanders: Bystander[];
  let handle: ReturnType<typeof openDatabase>;
  /** Each pool connection's server port and thread id. */
  let poolSessions: { port: number; id: number }[];

  beforeAll(async () => {
    const started = await startThrowawayServers(
      PORTS.map((port, i) => ({ name: `kill${i + 1}`, port })),
    );
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
      bystanders.push({ port: PORTS[1] as number, connection, id: connection.threadId });
    }
    proxy = new RoundRobinProxy(PORTS.map((port) => ({ host: "127.0.0.1", port })));
    await proxy.start();
    handle = openDatabase({
      url: `mysql://root@127.0.0.1:${proxy.port}/killtest`,
      poolSize: POOL,
      connectTimeoutMs: 2000,
      queryTimeoutMs: 2500,
    });
    // Every pool connection open at once: they alternate between the servers.
    const held = await Promise.all(
      Array.from({ length: POOL }, () =>
        sql<{
          id: number;
          port: number;
        }>`SELECT SLEEP(0.3) AS s, CONNECTION_ID() AS id, @@port AS port`
          .execute(handle.db)
          .then((r) => r.rows[0] as { id: number; port: number }),
      ),
    );
    poolSessions = held.map((r) => ({ port: Number(r.port), id: Number(r.id) }));
  }, 120_000);

  afterAll(async () => {
    for (const b of bystanders ?? []) b.connection.destroy();
    await handle?.close();
    await proxy?.close();
    await stopServers?.();
  });

  it("the service's connections are on both servers, and some share an id with another client's session", () => {
    expect(new Set(poolSessions.map((s) => s.port))).toEqual(new Set(PORTS));
    const onFirst = poolSessions.filter((s) => s.port === PORTS[0]).map((s) => s.id);
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

  it("when no KILL connection reaches a statement's server, the call's own connection closes at once and the server's limit ends the statement", async () => {
    // The pool's one connection on the second server; every later one (a KILL
    // connection looked for) on the first.
    const routed = new RoundRobinProxy([{ host: "127.0.0.1", port: PORTS[1] as number }]);
    await routed.start();
    const alone = openDatabase({
      url: `mysql://root@127.0.0.1:${routed.port}/killtest`,
      poolSize: 1,
      connectTimeoutMs: 2000,
      queryTimeoutMs: 2000,
    });
    try {
      await sql`SELECT 1`.execute(alone.db);
      routed.targets = [{ host: "127.0.0.1", port: PORTS[0] as number }];
      const caller = new AbortController();
      const started = performance.now();
      const call = sql
        .raw("SELECT SLEEP(20) /* unreachable */")
        .execute(withSignal(alone.db, caller.signal))
        .then(
          () => "finished",
          (err: unknown) => String((err as Error).message),
        );
      setTimeout(() => caller.abort(new Error("the caller left")), 300);
      expect(await call).toBe("the caller left");
      // Answered without waiting for the statement (generous, for a loaded box).
      expect(performance.now() - started).toBeLessThan(1500);
      // max_statement_time, set per session (2 s here), ends it on its server.
      await expectGone([urls[1] as string], "unreachable", 4000);
    } finally {
      await alone.close();
      await routed.close();
    }
  });
});

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
