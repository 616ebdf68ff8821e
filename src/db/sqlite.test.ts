import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "kysely";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { withSignal } from "./cancel.js";
import { openSqlite } from "./sqlite.js";

/** A second connection to the same file, as another process would hold it. */
type Raw = { exec(sql: string): void; close(): void };
const BetterSqlite3 = createRequire(import.meta.url)("better-sqlite3") as new (file: string) => Raw;

let dir: string;
let file: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "practice-sqlite-"));
  file = join(dir, "db.sqlite");
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe("a statement waiting out another process's lock", () => {
  it("stops when its call's signal aborts, with the call's reason, well before the lock wait ends", async () => {
    const db = openSqlite(file, 5000);
    await sql`CREATE TABLE t (x INTEGER)`.execute(db);
    const other = new BetterSqlite3(file);
    other.exec("BEGIN EXCLUSIVE");
    try {
      const call = new AbortController();
      const reason = new Error("the call's deadline");
      setTimeout(() => call.abort(reason), 100);
      const started = performance.now();
      const stopped = await sql`INSERT INTO t VALUES (1)`.execute(withSignal(db, call.signal)).then(
        () => "ran",
        (err: unknown) => err,
      );
      expect(stopped).toBe(reason);
      expect(performance.now() - started).toBeLessThan(1000);
    } finally {
      other.exec("ROLLBACK");
      other.close();
      await db.destroy();
    }
  });

  it("gives up with SQLITE_BUSY after its lock wait, and runs once the lock is gone", async () => {
    const db = openSqlite(file, 200);
    await sql`CREATE TABLE t (x INTEGER)`.execute(db);
    const other = new BetterSqlite3(file);
    other.exec("BEGIN EXCLUSIVE");
    const started = performance.now();
    const busy = await sql`INSERT INTO t VALUES (1)`.execute(db).then(
      () => undefined,
      (err: { code?: string }) => err.code,
    );
    expect(busy).toBe("SQLITE_BUSY");
    expect(performance.now() - started).toBeGreaterThanOrEqual(200);
    other.exec("ROLLBACK");
    other.close();
    await sql`INSERT INTO t VALUES (1)`.execute(db);
    await db.destroy();
  });
});
