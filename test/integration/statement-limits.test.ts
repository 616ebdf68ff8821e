import { sql } from "kysely";
import { afterAll, describe, expect, it } from "vitest";
import { withSignal } from "../../src/db/cancel.js";
import { type DatabaseHandle, openDatabase } from "../../src/db/connect.js";
import { databaseLimits } from "../../src/edge/call-limits.js";
import { createEmptyTestDatabase, type TestDatabase, testStore } from "../support/database.js";

/**
 * A statement's limit follows the deadline: the database's caps come from
 * the longest call's (databaseLimits, from REQUEST_TIMEOUT_MS), and each call's
 * statement is stopped at the call's own deadline. SELECT SLEEP stands in
 * for a long statement; MariaDB ends it early with an error when it is stopped.
 */
const mysqlOnly = describe.skipIf(testStore() === "sqlite");

let database: TestDatabase | undefined;
const handles: DatabaseHandle[] = [];

afterAll(async () => {
  await Promise.all(handles.map((h) => h.close()));
  await database?.drop();
});

async function pool(requestTimeoutMs: number): Promise<DatabaseHandle> {
  database ??= await createEmptyTestDatabase("mysql");
  const handle = openDatabase({
    url: database.url,
    poolSize: 1,
    connectTimeoutMs: 3000,
    limits: databaseLimits({ requestTimeoutMs }),
  });
  handles.push(handle);
  return handle;
}

/** Runs SELECT SLEEP(seconds): how long it took and whether it ran to its end. */
async function sleepFor(handle: DatabaseHandle, seconds: number, signal?: AbortSignal) {
  const started = performance.now();
  const ran = await sql<{ slept: number }>`SELECT SLEEP(${seconds}) AS slept`
    .execute(withSignal(handle.db, signal))
    .then(
      (r) => Number(r.rows[0]?.slept) === 0,
      () => false,
    );
  return { ran, ms: performance.now() - started };
}

mysqlOnly("a statement's limit follows the deadline (MariaDB)", () => {
  it("with REQUEST_TIMEOUT_MS=14000 a statement runs past 5 s", async () => {
    const { ran, ms } = await sleepFor(await pool(14_000), 6);
    expect(ran).toBe(true);
    expect(ms).toBeGreaterThan(5900);
  }, 20_000);

  it("with REQUEST_TIMEOUT_MS=1000 none of a call's runs past 1 s", async () => {
    const { ran, ms } = await sleepFor(await pool(1000), 3, AbortSignal.timeout(1000));
    expect(ran).toBe(false);
    // Generous: stopped at the call's 1 s, not at the pool's 5 s.
    expect(ms).toBeLessThan(1800);
  }, 20_000);

  it("a call's statement never runs longer than what the call has left", async () => {
    const { ran, ms } = await sleepFor(await pool(14_000), 6, AbortSignal.timeout(1500));
    expect(ran).toBe(false);
    // Generous: stopped at the call's 1.5 s, not at the pool's 7 s.
    expect(ms).toBeLessThan(2500);
  }, 20_000);
});
