import { sql } from "kysely";
import { createConnection } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withSignal } from "../../src/db/cancel.js";
import { type DatabaseHandle, openDatabase } from "../../src/db/connect.js";
import { statementLimits } from "../../src/edge/call-limits.js";
import { testServerUrl, testStore } from "../support/database.js";
import { proxyToTestServer, type TcpProxy } from "../support/tcp-proxy.js";

// A stopped call's statement gets KILL QUERY on a connection of its own. That
// KILL can reach the server before the statement does (the statement still on
// the wire, or queued behind a slow link), and then ends nothing: the
// statement starts after it and runs on. It must be stopped all the same.

const MARKER = "kill-before-statement";

describe.skipIf(testStore() !== "mysql")(
  "a KILL QUERY that reaches the server before its statement",
  () => {
    let proxy: TcpProxy;
    let handle: DatabaseHandle;

    beforeAll(async () => {
      let url: string;
      ({ proxy, url } = await proxyToTestServer());
      handle = openDatabase({
        url,
        poolSize: 1,
        connectTimeoutMs: 2000,
        limits: statementLimits(4000),
      });
      // The pool's connection, ready before its link slows.
      await sql`SELECT 1`.execute(handle.db);
    });

    afterAll(async () => {
      await handle?.close();
      await proxy?.cut();
    });

    it("stops the statement once it runs: the call ends with its own reason, its connection kept", async () => {
      // The statement reaches the server 150 ms late; its call stops after 30 ms.
      proxy.slowOn(MARKER, 150);
      const caller = new AbortController();
      setTimeout(() => caller.abort(new Error("the caller left")), 30);
      const outcome = await sql
        .raw(`SELECT SLEEP(20) /* ${MARKER} */`)
        .execute(withSignal(handle.db, caller.signal))
        .then(
          () => "ran",
          (err: Error) => err.message,
        );
      // Not the statement limit's "query timed out": the caller's own reason.
      expect(outcome).toBe("the caller left");
      const c = await createConnection({ uri: testServerUrl() });
      const [rows] = await c.query(
        "SELECT ID FROM information_schema.PROCESSLIST WHERE INFO LIKE ? AND ID <> CONNECTION_ID()",
        [`%${MARKER}%`],
      );
      await c.end();
      expect(rows).toEqual([]);
      // The connection was kept (KILL QUERY, not KILL): it serves the next call.
      const { rows: next } = await sql<{ one: number }>`SELECT 1 AS one`.execute(handle.db);
      expect(next).toEqual([{ one: 1 }]);
    });
  },
);
