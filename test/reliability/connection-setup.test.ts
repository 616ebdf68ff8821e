import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DatabaseHandle, openDatabase } from "../../src/db/connect.js";
import { testStore } from "../support/database.js";
import { defaultDatabaseLimits } from "../support/settings.js";
import { proxyToTestServer, type TcpProxy } from "../support/tcp-proxy.js";

// A new connection is readied (sql_mode, limits, Galera or not) in a few
// statements before its first use, all of them within DB_CONNECT_TIMEOUT_MS
// together: a server that answers each one slowly cannot hold a caller for
// that limit once per statement.

const CONNECT_TIMEOUT_MS = 1000;
/** The set-up's first statement: the link slows from there on, after the handshake. */
const FIRST_SETUP_STATEMENT = "@@SESSION.sql_mode";

describe.skipIf(testStore() !== "mysql")("a new connection's set-up", () => {
  let proxy: TcpProxy;
  let url: string;
  let handle: DatabaseHandle;

  beforeAll(async () => {
    ({ proxy, url } = await proxyToTestServer());
    handle = openDatabase({
      url,
      poolSize: 1,
      connectTimeoutMs: CONNECT_TIMEOUT_MS,
      limits: defaultDatabaseLimits(),
    });
  });

  afterAll(async () => {
    await handle?.close();
    await proxy?.cut();
  });

  it("fails once its statements together outlast DB_CONNECT_TIMEOUT_MS, though each alone is quicker", async () => {
    // 250 ms each way: every statement answers in about 500 ms, the set-up's
    // five or more in 2.5 s or more.
    proxy.slowOn(FIRST_SETUP_STATEMENT, 250);
    const failed = await sql`SELECT 1 AS one`.execute(handle.db).then(
      () => undefined,
      (err: Error & { cause?: { code?: unknown } }) => err,
    );
    expect(failed?.message).toMatch(/^database session not ready: /);
    expect(failed?.cause?.code).toBe("PROTOCOL_SEQUENCE_TIMEOUT");
    // The failed connection is gone: the next one, on a quick link, serves.
    const { rows } = await sql<{ one: number }>`SELECT 1 AS one`.execute(handle.db);
    expect(rows).toEqual([{ one: 1 }]);
  });

  it("serves on a link slow within the limit", async () => {
    await handle.close();
    handle = openDatabase({
      url,
      poolSize: 1,
      connectTimeoutMs: CONNECT_TIMEOUT_MS,
      limits: defaultDatabaseLimits(),
    });
    // About 100 ms a statement: the set-up in some 600 ms.
    proxy.slowOn(FIRST_SETUP_STATEMENT, 50);
    const { rows } = await sql<{ one: number }>`SELECT 1 AS one`.execute(handle.db);
    expect(rows).toEqual([{ one: 1 }]);
  });
});
