import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { connect as netConnect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createConnection } from "mysql2/promise";
import { afterAll, describe, expect, it } from "vitest";
import { signToken } from "../../src/auth/tokens.js";
import { MIGRATION_LOCK_TABLE } from "../../src/db/migration-lock.js";
import { testServerUrl, testStore } from "../support/database.js";
import { listeningPort, serviceEnv } from "../support/listening.js";
import { reportFigures } from "../support/reliability.js";
import { TEST_SECRET } from "../support/service.js";

/** Another process's hold on the SQLite file. */
type Raw = { exec(sql: string): void; close(): void };
const BetterSqlite3 = createRequire(import.meta.url)("better-sqlite3") as new (file: string) => Raw;

const dirs: string[] = [];
const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) if (child.exitCode === null) child.kill("SIGKILL");
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

interface Service {
  child: ChildProcess;
  port: number;
  file: string;
  quizId: string;
  /** Everything it wrote to stdout so far. */
  out: () => string;
  exit: Promise<number | null>;
}

/** The real service (src/main.ts) on a SQLite file of its own; resolves once it listens. */
async function startService(env: Record<string, string>): Promise<Service> {
  const dir = mkdtempSync(join(tmpdir(), "practice-forced-"));
  dirs.push(dir);
  const file = join(dir, "db.sqlite");
  const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
    env: serviceEnv({
      DATABASE_URL: `sqlite:${file}`,
      NODE_ENV: "production",
      PRACTICE_PAGE: "off",
      ...env,
    }),
    stdio: ["ignore", "pipe", "ignore"],
  });
  children.push(child);
  const listening = listeningPort(child);
  const exit = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const port = await listening.port;
  const out = listening.output;
  // The demo content's first quiz (loaded on an empty SQLite store).
  const quizId = /"quizIds":\["?(\d+)/.exec(out())?.[1] ?? "1";
  return { child, port, file, quizId, out, exit };
}

/** A Connect POST over HTTP/1.1 that declares a body and never sends it: a request the drain waits for. */
async function heldOpen(port: number): Promise<Socket> {
  const token = await signToken(TEST_SECRET, "held");
  const socket = netConnect(port, "127.0.0.1");
  socket.on("error", () => {});
  socket.write(
    "POST /practice.v1.PracticeSessionService/ListSessions HTTP/1.1\r\nhost: x\r\n" +
      `authorization: Bearer ${token}\r\n` +
      "content-type: application/json\r\ncontent-length: 100\r\n\r\n",
  );
  return socket;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Resolves once `read()` matches `pattern`, polling. */
async function seen(read: () => string, pattern: RegExp, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!pattern.test(read())) {
    if (Date.now() > deadline) throw new Error(`never saw ${pattern}:\n${read()}`);
    await sleep(20);
  }
}

// The service's own process on SQLite: one run is enough (not per store).
describe.skipIf(testStore() === "mysql")("a stop that does not finish", () => {
  it("a third signal during a drain forces the exit, non-zero", async () => {
    const svc = await startService({});
    const socket = await heldOpen(svc.port);
    try {
      await sleep(300);
      svc.child.kill("SIGTERM");
      await seen(svc.out, /"msg":"shutting down"/);
      // Distinct signals: each more than the repeat window (1 s) after the last.
      await sleep(1200);
      svc.child.kill("SIGINT");
      await seen(svc.out, /"msg":"already shutting down/);
      await sleep(1200);
      const t0 = performance.now();
      svc.child.kill("SIGTERM");
      const code = await svc.exit;
      // Bounded, not a speed target: without the forced exit the drain waits out the request.
      expect(performance.now() - t0).toBeLessThan(2000);
      expect(code).not.toBe(0);
      expect(svc.out()).toMatch(/"msg":"forced exit"/);
      expect(svc.out()).not.toMatch(/"msg":"stopped"/);
    } finally {
      socket.destroy();
    }
  }, 30_000);

  it("three presses of Ctrl-C 300 ms apart force the exit at the third, with a request held open", async () => {
    const svc = await startService({});
    const socket = await heldOpen(svc.port);
    try {
      await sleep(300);
      svc.child.kill("SIGINT");
      await seen(svc.out, /"msg":"shutting down"/);
      await sleep(300);
      svc.child.kill("SIGINT");
      await sleep(300);
      const t0 = performance.now();
      svc.child.kill("SIGINT");
      const code = await svc.exit;
      const ms = performance.now() - t0;
      reportFigures("three SIGINTs 300 ms apart", { code, ms: Math.round(ms) });
      // Bounded, not a speed target: without the forced exit the drain waits out the request.
      expect(ms).toBeLessThan(1000);
      expect(code).not.toBe(0);
      expect(svc.out()).toMatch(/"msg":"forced exit"/);
    } finally {
      socket.destroy();
    }
  }, 30_000);

  it("a signal twice within a few milliseconds (npm forwarding it) counts once, even pressed again", async () => {
    const svc = await startService({});
    const socket = await heldOpen(svc.port);
    try {
      await sleep(300);
      // What a terminal's Ctrl-C under npm delivers: one from the terminal, one from npm.
      svc.child.kill("SIGINT");
      svc.child.kill("SIGINT");
      await seen(svc.out, /"msg":"shutting down"/);
      await sleep(300);
      svc.child.kill("SIGINT");
      svc.child.kill("SIGINT");
      await seen(svc.out, /"msg":"already shutting down/);
      await sleep(300);
      expect(svc.child.exitCode).toBeNull();
      expect(svc.out()).not.toMatch(/"msg":"forced exit"/);
      svc.child.kill("SIGINT");
      svc.child.kill("SIGINT");
      expect(await svc.exit).not.toBe(0);
      expect(svc.out()).toMatch(/"msg":"forced exit"/);
    } finally {
      socket.destroy();
    }
  }, 30_000);

  it("a stop while it waits for the database ends the wait at once, exit 0", async () => {
    // Nothing listens on port 9 of 127.0.0.1: the service keeps retrying.
    const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
      env: serviceEnv({
        DATABASE_URL: "mysql://root@127.0.0.1:9/practice_never",
        NODE_ENV: "production",
        PRACTICE_PAGE: "off",
      }),
      stdio: ["ignore", "pipe", "pipe"],
    });
    children.push(child);
    let out = "";
    child.stdout?.on("data", (chunk) => {
      out += chunk;
    });
    child.stderr?.on("data", (chunk) => {
      out += chunk;
    });
    const exit = new Promise<number | null>((resolve) =>
      child.once("exit", (code) => resolve(code)),
    );
    // tsx compiles the entry first: slow on a busy machine.
    await seen(() => out, /keep trying/, 30_000);
    const t0 = performance.now();
    child.kill("SIGTERM");
    const code = await exit;
    const ms = performance.now() - t0;
    reportFigures("a stop during the database wait", { code, ms: Math.round(ms) });
    expect(code).toBe(0);
    // Bounded, not a speed target: the wait would go on for DATABASE_WAIT.
    expect(ms).toBeLessThan(2000);
    expect(out).toMatch(/"msg":"stopped before it started"/);
    expect(out).not.toMatch(/cannot reach the database/);
  }, 60_000);

  it("a drain past SHUTDOWN_TIMEOUT_MS cuts what is left and exits non-zero", async () => {
    const svc = await startService({ SHUTDOWN_TIMEOUT_MS: "300", REQUEST_TIMEOUT_MS: "60000" });
    // A write in flight that cannot finish: another process holds the file.
    const other = new BetterSqlite3(svc.file);
    other.exec("BEGIN EXCLUSIVE");
    const socket = await heldOpen(svc.port);
    try {
      const token = await signToken(TEST_SECRET, "stuck");
      const start = fetch(`http://127.0.0.1:${svc.port}/quizzes/${svc.quizId}/sessions`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}` },
      }).then(
        (res) => res.status,
        () => "reset",
      );
      await sleep(500);
      const t0 = performance.now();
      svc.child.kill("SIGTERM");
      const code = await svc.exit;
      const ms = performance.now() - t0;
      reportFigures("a drain past SHUTDOWN_TIMEOUT_MS (300 ms)", {
        code,
        ms: Math.round(ms),
        start: await start,
      });
      expect(code).not.toBe(0);
      expect(svc.out()).toMatch(
        /"cut":2,.*"msg":"stopped: connections cut at SHUTDOWN_TIMEOUT_MS"/,
      );
      // Bounded, not a speed target: the drain gives up at its limit, not at the call's deadline.
      expect(ms).toBeLessThan(5000);
    } finally {
      socket.destroy();
      other.exec("ROLLBACK");
      other.close();
    }
  }, 30_000);
});

describe.skipIf(testStore() === "sqlite")("a stop during start-up on MySQL", () => {
  it("a stop while another replica holds the migration lock ends the wait at once, exit 0, nothing migrated", async () => {
    const server = new URL(testServerUrl());
    const name = `practice_stopwait_${randomBytes(5).toString("hex")}`;
    const url = new URL(server);
    url.pathname = `/${name}`;
    // A connection with no default database: the processlist rows on `name` are the service's.
    const admin = await createConnection({ uri: server.toString() });
    try {
      await admin.query(`CREATE DATABASE \`${name}\``);
      await admin.query(`CREATE TABLE \`${name}\`.${MIGRATION_LOCK_TABLE} (
        id VARCHAR(32) CHARACTER SET ascii NOT NULL PRIMARY KEY,
        holder CHAR(36) CHARACTER SET ascii NOT NULL,
        expires_at DATETIME(3) NOT NULL) ENGINE=InnoDB`);
      await admin.query(
        `INSERT INTO \`${name}\`.${MIGRATION_LOCK_TABLE} VALUES ('migrate', 'another-replica', UTC_TIMESTAMP(3) + INTERVAL 1 HOUR)`,
      );
      const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
        env: serviceEnv({
          DATABASE_URL: url.toString(),
          NODE_ENV: "production",
          PRACTICE_PAGE: "off",
        }),
        stdio: ["ignore", "pipe", "ignore"],
      });
      children.push(child);
      let out = "";
      child.stdout?.on("data", (chunk) => {
        out += chunk;
      });
      const exit = new Promise<number | null>((resolve) =>
        child.once("exit", (code) => resolve(code)),
      );
      // Waiting on the lock: the service has connections on the database.
      const deadline = Date.now() + 30_000;
      for (;;) {
        const [rows] = await admin.query(
          "SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE DB = ?",
          [name],
        );
        if (Number((rows as { n: number }[])[0]?.n) > 0) break;
        if (Date.now() > deadline) throw new Error(`never connected:\n${out}`);
        await sleep(100);
      }
      await sleep(500);
      const t0 = performance.now();
      child.kill("SIGTERM");
      const code = await exit;
      const ms = performance.now() - t0;
      reportFigures("a stop while waiting for the migration lock", { code, ms: Math.round(ms) });
      expect(code).toBe(0);
      // Bounded, not a speed target: the lock wait would go on for minutes.
      expect(ms).toBeLessThan(2000);
      expect(out).toMatch(/"msg":"stopped before it started"/);
      const [tables] = await admin.query(
        "SELECT COUNT(*) AS n FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'practice_sessions'",
        [name],
      );
      expect(Number((tables as { n: number }[])[0]?.n)).toBe(0);
    } finally {
      await admin.query(`DROP DATABASE IF EXISTS \`${name}\``);
      await admin.end();
    }
  }, 60_000);
});
