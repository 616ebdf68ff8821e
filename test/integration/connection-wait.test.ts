import { setTimeout as sleep } from "node:timers/promises";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withSignal } from "../../src/db/cancel.js";
import { type DatabaseHandle, openDatabase } from "../../src/db/connect.js";
import { createEmptyTestDatabase, type TestDatabase } from "../support/database.js";

/**
 * A call that stops while it waits for a connection (the pool's only one, or
 * SQLite's, is in another call's transaction) stops waiting then; the
 * connection, once free, goes back unused to whoever waits next.
 */
describe("a call waiting for a connection", () => {
  let database: TestDatabase;
  let handle: DatabaseHandle;

  beforeAll(async () => {
    database = await createEmptyTestDatabase();
    handle = openDatabase({ url: database.url, poolSize: 1, connectTimeoutMs: 3000 });
  });

  afterAll(async () => {
    await handle?.close();
    await database?.drop();
  });

  /**
   * While another transaction holds the connection, runs `call` with a signal
   * aborted after 100 ms: its outcome, and whether it came while the
   * connection was still held (the holder lets go after 5 s at the latest).
   */
  async function stopWhileWaiting(call: (signal: AbortSignal) => Promise<unknown>) {
    let letGo = () => {};
    const lettingGo = new Promise<void>((resolve) => {
      letGo = resolve;
    });
    let holding = () => {};
    const held = new Promise<void>((resolve) => {
      holding = resolve;
    });
    let holderDone = false;
    const holder = handle.db
      .transaction()
      .execute(async (trx) => {
        await sql`SELECT 1 AS one`.execute(trx);
        holding();
        await Promise.race([lettingGo, sleep(5000)]);
      })
      .finally(() => {
        holderDone = true;
      });
    await held;
    const caller = new AbortController();
    setTimeout(() => caller.abort(new Error("the caller left")), 100);
    const outcome = await call(caller.signal).then(
      () => "ran",
      (err: Error) => err.message,
    );
    const whileHeld = !holderDone;
    letGo();
    await holder;
    return { outcome, whileHeld };
  }

  it("a statement stops waiting when its call stops", async () => {
    const result = await stopWhileWaiting((signal) =>
      sql`SELECT 2 AS two`.execute(withSignal(handle.db, signal)),
    );
    expect(result).toEqual({ outcome: "the caller left", whileHeld: true });
    const { rows } = await sql<{ three: number }>`SELECT 3 AS three`.execute(handle.db);
    expect(Number(rows[0]?.three)).toBe(3);
  });

  it("a transaction stops waiting when its call stops, and runs none of its work", async () => {
    let ran = false;
    const result = await stopWhileWaiting((signal) =>
      withSignal(handle.db, signal)
        .transaction()
        .execute(async (trx) => {
          ran = true;
          await sql`SELECT 2 AS two`.execute(trx);
        }),
    );
    expect(result).toEqual({ outcome: "the caller left", whileHeld: true });
    expect(ran).toBe(false);
    const { rows } = await sql<{ three: number }>`SELECT 3 AS three`.execute(handle.db);
    expect(Number(rows[0]?.three)).toBe(3);
  });

  it("a call that has not stopped waits, and runs once the connection is free", async () => {
    let letGo = () => {};
    const holder = handle.db.transaction().execute(async (trx) => {
      await sql`SELECT 1 AS one`.execute(trx);
      await new Promise<void>((resolve) => {
        letGo = resolve;
      });
    });
    await sleep(50);
    const call = sql<{ two: number }>`SELECT 2 AS two`.execute(
      withSignal(handle.db, new AbortController().signal),
    );
    await sleep(200);
    letGo();
    await holder;
    expect(Number((await call).rows[0]?.two)).toBe(2);
  });
});
