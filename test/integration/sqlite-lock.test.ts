import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAuthenticator } from "../../src/auth/authenticator.js";
import { signToken } from "../../src/auth/tokens.js";
import { type DatabaseHandle, openDatabase } from "../../src/db/connect.js";
import { migrateToLatest } from "../../src/db/migrate.js";
import { FakeClock } from "../../src/domain/clock.js";
import { type OnePortServer, servePort } from "../../src/edge/one-port.js";
import { buildApp } from "../../src/server.js";
import { testStore } from "../support/database.js";
import { insertQuiz, type QuizFixture } from "../support/fixtures.js";
import { TEST_SECRET } from "../support/service.js";
import { defaultAppSettings, defaultDatabaseLimits } from "../support/settings.js";

/** A second connection to the same file, as another process would hold it. */
type Raw = { exec(sql: string): void; close(): void };
const BetterSqlite3 = createRequire(import.meta.url)("better-sqlite3") as new (file: string) => Raw;

let dir: string;
let database: DatabaseHandle;
let port: OnePortServer;
let baseUrl: string;
let quiz: QuizFixture;
const clock = new FakeClock(new Date());

beforeAll(async () => {
  if (testStore() !== "sqlite") return;
  dir = mkdtempSync(join(tmpdir(), "practice-lock-"));
  database = openDatabase({
    url: `sqlite:${join(dir, "db.sqlite")}`,
    poolSize: 1,
    connectTimeoutMs: 1000,
    limits: defaultDatabaseLimits(),
  });
  await migrateToLatest(database.db);
  quiz = await insertQuiz(database.db);
  const app = await buildApp({
    ...defaultAppSettings(),
    db: database.db,
    clock,
    authenticator: createAuthenticator({ secret: TEST_SECRET }, clock),
    logger: pino({ level: "silent" }),
    requestTimeoutMs: 3000,
  });
  port = servePort(app);
  await port.listen(0, "127.0.0.1");
  baseUrl = `http://127.0.0.1:${(port.server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await port?.close(1000);
  await database?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const start = async (user: string) =>
  fetch(`${baseUrl}/quizzes/${quiz.quizId}/sessions`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${await signToken(TEST_SECRET, user, { now: clock.now() })}`,
    },
  });

/** /healthz answered while `pending` is not settled: how long each took. */
async function healthzWhile(pending: Promise<unknown>): Promise<number[]> {
  let settled = false;
  void pending.finally(() => {
    settled = true;
  });
  const ms: number[] = [];
  while (!settled) {
    const t0 = performance.now();
    expect((await fetch(`${baseUrl}/healthz`)).status).toBe(200);
    ms.push(performance.now() - t0);
    await new Promise((r) => setTimeout(r, 50));
  }
  return ms;
}

describe.skipIf(testStore() !== "sqlite")("a SQLite file locked by another process", () => {
  it("keeps the event loop free: /healthz answers while a write waits for the lock, which then succeeds", async () => {
    const other = new BetterSqlite3(join(dir, "db.sqlite"));
    other.exec("BEGIN EXCLUSIVE");
    const write = start("waits");
    setTimeout(() => {
      other.exec("COMMIT");
      other.close();
    }, 800);
    const healthz = await healthzWhile(write);
    expect((await write).status).toBe(201);
    expect(healthz.length).toBeGreaterThan(3);
    // Bounded, not a speed target: a blocked loop would hold it for the whole lock.
    expect(Math.max(...healthz)).toBeLessThan(1000);
  });

  it("answers a write 503 once the lock outlasts the request's deadline", async () => {
    const other = new BetterSqlite3(join(dir, "db.sqlite"));
    other.exec("BEGIN EXCLUSIVE");
    try {
      const write = start("gives-up");
      const healthz = await healthzWhile(write);
      const res = await write;
      expect([res.status, ((await res.json()) as { code: string }).code]).toEqual([
        503,
        "unavailable",
      ]);
      expect(Math.max(...healthz)).toBeLessThan(1000);
    } finally {
      other.exec("ROLLBACK");
      other.close();
    }
  }, 20_000);

  it("retries a write only within its own call's deadline: a shorter connect-timeout-ms answers unavailable before it", async () => {
    const other = new BetterSqlite3(join(dir, "db.sqlite"));
    other.exec("BEGIN EXCLUSIVE");
    try {
      const started = performance.now();
      const res = await fetch(`${baseUrl}/practice.v1.PracticeSessionService/StartSession`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${await signToken(TEST_SECRET, "short-deadline", { now: clock.now() })}`,
          "content-type": "application/json",
          "connect-protocol-version": "1",
          // Half the server's 3 s: its retries get half of this call's time, not of 3 s.
          "connect-timeout-ms": "1500",
        },
        body: JSON.stringify({ quiz_id: quiz.quizId }),
      });
      expect([res.status, ((await res.json()) as { code: string }).code]).toEqual([
        503,
        "unavailable",
      ]);
      // Generous: answered by the call's own deadline, not past it.
      expect(performance.now() - started).toBeLessThan(1500);
    } finally {
      other.exec("ROLLBACK");
      other.close();
    }
  }, 20_000);
});
