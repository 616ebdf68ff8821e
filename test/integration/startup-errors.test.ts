import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { createConnection } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testServerUrl, testStore } from "../support/database.js";
import { REPO, runEntryPoint } from "../support/entry.js";
import { TEST_SECRET } from "../support/service.js";

/** What `npm start` needs to start quickly on its own: no page build, no NATS. */
const SERVICE_ENV = {
  HOST: "127.0.0.1",
  PORT: "0",
  METRICS_PORT: "0",
  DATABASE_URL: "sqlite::memory:",
  JWT_SECRET: TEST_SECRET,
  LOG_LEVEL: "silent",
  PRACTICE_PAGE: "off",
  NATS_URL: undefined,
  NODE_ENV: undefined,
};

const service = (env: Record<string, string | undefined>) =>
  runEntryPoint("src/main.ts", { env: { ...SERVICE_ENV, ...env } });

/** One line on stderr, exit 1: the run's whole failure as a person sees it. */
function expectOneLine(run: { code: number | null; errorLines: string[] }, line: string | RegExp) {
  expect(run.errorLines, run.errorLines.join("\n")).toHaveLength(1);
  if (typeof line === "string") expect(run.errorLines[0]).toBe(line);
  else expect(run.errorLines[0]).toMatch(line);
  expect(run.code).toBe(1);
}

// Store-independent cases run once, in the SQLite run.
describe.skipIf(testStore() === "mysql")("start-up failures without a database", () => {
  let blocker: Server;
  let busy: number;
  beforeAll(async () => {
    blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
    busy = (blocker.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise((resolve) => blocker.close(resolve));
  });

  it("a busy PORT names PORT", async () => {
    expectOneLine(
      await service({ PORT: String(busy) }),
      `cannot listen on 127.0.0.1:${busy} (PORT): the port is already in use (stop the other process, or set PORT to a free port)`,
    );
  });

  it("a busy METRICS_PORT names METRICS_PORT, before the database is made or migrated", async () => {
    const folder = mkdtempSync(join(tmpdir(), "busy-port-"));
    try {
      expectOneLine(
        await service({ METRICS_PORT: String(busy), DATABASE_URL: `sqlite:${folder}/x.db` }),
        `cannot listen on 127.0.0.1:${busy} (METRICS_PORT): the port is already in use (stop the other process, or set METRICS_PORT to a free port)`,
      );
      expect(readdirSync(folder)).toEqual([]);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });

  it("a busy METRICS_PORT is the last thing said: no `listening` line, no log line after it", async () => {
    const run = await service({ METRICS_PORT: String(busy), LOG_LEVEL: "info" });
    expectOneLine(run, /\(METRICS_PORT\): the port is already in use/);
    expect(run.stdout).not.toMatch(/"msg":"listening"/);
    // stdout and stderr in one pipe, as a terminal shows them: the error ends the output.
    const merged = await new Promise<string>((done) => {
      const tsx = pathToFileURL(join(REPO, "node_modules/tsx/dist/loader.mjs")).href;
      const env: Record<string, string | undefined> = {
        ...process.env,
        ...SERVICE_ENV,
        METRICS_PORT: String(busy),
        LOG_LEVEL: "info",
      };
      for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
      const child = spawn(
        "bash",
        ["-c", `exec "${process.execPath}" --import "${tsx}" src/main.ts 2>&1`],
        { cwd: REPO, env: env as NodeJS.ProcessEnv, stdio: ["ignore", "pipe", "inherit"] },
      );
      let out = "";
      child.stdout.on("data", (d) => {
        out += d;
      });
      child.on("exit", () => done(out));
    });
    const lines = merged.split("\n").filter((l) => l.trim() !== "");
    expect(lines.at(-1), merged).toMatch(/\(METRICS_PORT\): the port is already in use/);
  });

  it("a SQLite path under a file names DATABASE_URL", async () => {
    expectOneLine(
      await service({ DATABASE_URL: "sqlite:./README.md/x.db" }),
      /^cannot create the database SQLite .*README\.md\/x\.db: \.\/README\.md is a file, not a folder \(set DATABASE_URL to a path under a folder\)$/,
    );
  });

  it("a SQLite path whose folder does not exist names DATABASE_URL and the folder, and makes nothing", async () => {
    const missing = join(tmpdir(), `no-such-folder-${randomBytes(4).toString("hex")}`);
    for (const tool of ["src/main.ts", "scripts/migrate.ts", "scripts/seed-demo.ts"]) {
      const run = await runEntryPoint(tool, {
        env: { ...SERVICE_ENV, DATABASE_URL: `sqlite:${missing}/sub/x.db` },
      });
      expectOneLine(
        run,
        `cannot open the database SQLite ${missing}/sub/x.db: the folder ${missing}/sub does not exist (create it, or fix DATABASE_URL)`,
      );
      expect(existsSync(missing), tool).toBe(false);
    }
  });

  it("a mysql:// URL without a database name says DATABASE_URL needs one", async () => {
    for (const url of ["mysql://root@127.0.0.1:3306", "mysql://root@127.0.0.1:3306/"]) {
      expectOneLine(
        await service({ DATABASE_URL: url }),
        "configuration error: DATABASE_URL needs a database name: mysql://user:pass@host:port/database",
      );
    }
  });

  it("a bad setting: the configuration's own line, naming the variable (each one: src/config.test.ts)", async () => {
    expectOneLine(
      await service({ PORT: "http" }),
      'configuration error: PORT must be an integer from 0 to 65535, got "http"',
    );
  });

  it("a missing TLS file is named", async () => {
    expectOneLine(
      await service({
        TLS_CERT_FILE: "/nonexistent/cert.pem",
        TLS_KEY_FILE: "test/fixtures/tls/key.pem",
      }),
      "TLS_CERT_FILE: /nonexistent/cert.pem: no such file (set TLS_CERT_FILE to a PEM file)",
    );
  });

  it("TLS files that are not a certificate and key are named", async () => {
    expectOneLine(
      await service({
        TLS_CERT_FILE: "test/fixtures/tls/key.pem",
        TLS_KEY_FILE: "test/fixtures/tls/key.pem",
      }),
      /^TLS_CERT_FILE and TLS_KEY_FILE are not a PEM certificate and its private key/,
    );
  });

  it("a database that never answers: one warning saying how long it keeps trying, then one line", async () => {
    // Nothing listens on port 9 of 127.0.0.1: refused on every try.
    const run = await service({
      DATABASE_URL: "mysql://root@127.0.0.1:9/practice_never",
      DATABASE_WAIT_MS: "2500",
      LOG_LEVEL: "warn",
    });
    expectOneLine(
      run,
      "cannot reach the database MySQL 127.0.0.1:9/practice_never: connection refused (start MySQL/MariaDB there, or set DATABASE_URL); tried for 2.5 s (DATABASE_WAIT_MS)",
    );
    const warnings = run.stdout.split("\n").filter((l) => l.includes('"level":40'));
    expect(warnings, run.stdout).toHaveLength(1);
    expect(warnings[0]).toMatch(/keep trying for 2\.5 s \(DATABASE_WAIT_MS\)/);
  });

  it("a database that never answers a connection: no try outlasts DATABASE_WAIT_MS", async () => {
    // 10.255.255.1 is not routed: a connection to it hears nothing (or, on some
    // networks, is refused at once). A try may last DB_CONNECT_TIMEOUT_MS (20 s
    // here), unless the wait (2 s) ends first. Bounded, not a speed target.
    const t0 = performance.now();
    const run = await service({
      DATABASE_URL: "mysql://root@10.255.255.1:3306/practice_never",
      DATABASE_WAIT_MS: "2000",
      DB_CONNECT_TIMEOUT_MS: "20000",
    });
    expectOneLine(run, /^cannot reach the database MySQL 10\.255\.255\.1:3306\/practice_never: /);
    expect(performance.now() - t0).toBeLessThan(15_000);
  });

  it("npm run token: a bad user id or extra arguments give one line and the usage", async () => {
    const env = { JWT_SECRET: TEST_SECRET };
    expectOneLine(
      await runEntryPoint("scripts/token.ts", { env, args: ["alice", "bob"] }),
      "one user id at most; usage: npm run token -- [USER_ID] (default demo)",
    );
    expectOneLine(
      await runEntryPoint("scripts/token.ts", { env, args: [""] }),
      /^the user id must be 1-255 characters; usage: npm run token/,
    );
  });

  it("npm run relay without NATS_URL says to set it", async () => {
    expectOneLine(
      await runEntryPoint("scripts/relay.ts", {
        env: { NATS_URL: undefined, DATABASE_URL: "sqlite::memory:" },
      }),
      "configuration error: set NATS_URL (for example nats://127.0.0.1:4222)",
    );
  });

  it("npm run seed:demo and npm run migrate name a bad DATABASE_URL", async () => {
    for (const script of ["scripts/seed-demo.ts", "scripts/migrate.ts"]) {
      expectOneLine(
        await runEntryPoint(script, { env: { DATABASE_URL: "postgres://x/y" } }),
        /^configuration error: DATABASE_URL must be mysql:\/\//,
      );
    }
  });
});

describe.skipIf(testStore() !== "mysql")("start-up failures of the database", () => {
  const server = new URL(testServerUrl());
  const suffix = randomBytes(4).toString("hex");
  const database = `practice_startup_${suffix}`;
  const noRights = `ps_none_${suffix}`;
  const readOnly = `ps_ro_${suffix}`;
  const password = "pw-startup-test";
  const urlAs = (user: string, pass = password, db = database) => {
    const url = new URL(server);
    url.username = user;
    url.password = pass;
    url.pathname = `/${db}`;
    return url.toString();
  };
  const hostPort = `${server.hostname}:${server.port || "3306"}`;
  const admin = () => createConnection({ uri: server.toString() });

  beforeAll(async () => {
    const root = await admin();
    try {
      await root.query(`CREATE DATABASE \`${database}\``);
      for (const user of [noRights, readOnly]) {
        await root.query(`CREATE USER '${user}'@'%' IDENTIFIED BY '${password}'`);
      }
      // Enough to use the tables, not to make them.
      await root.query(
        `GRANT SELECT, INSERT, UPDATE, DELETE ON \`${database}\`.* TO '${readOnly}'@'%'`,
      );
    } finally {
      await root.end();
    }
  });
  afterAll(async () => {
    const root = await admin();
    try {
      for (const user of [noRights, readOnly])
        await root.query(`DROP USER IF EXISTS '${user}'@'%'`);
      await root.query(`DROP DATABASE IF EXISTS \`${database}\``);
    } finally {
      await root.end();
    }
  });

  it("a refused login is final: no retries, one line naming DATABASE_URL", async () => {
    const run = await service({ DATABASE_URL: urlAs(noRights, "wrong"), LOG_LEVEL: "warn" });
    expectOneLine(
      run,
      `the database MySQL ${hostPort}/${database} refused the login of user '${noRights}' (fix the user or password in DATABASE_URL)`,
    );
    expect(run.stdout).not.toMatch(/retrying/);
  });

  it("an unknown host is final, and named", async () => {
    const url = new URL(urlAs(noRights));
    url.hostname = "no-such-host.invalid";
    const run = await service({ DATABASE_URL: url.toString(), LOG_LEVEL: "warn" });
    expectOneLine(
      run,
      `cannot reach the database MySQL ${url.host}/${database}: unknown host no-such-host.invalid (fix the host in DATABASE_URL)`,
    );
    expect(run.stdout).not.toMatch(/retrying/);
  });

  it("a user who may not use the database is told which grant is missing", async () => {
    const other = `practice_startup_other_${suffix}`;
    expectOneLine(
      await service({ DATABASE_URL: urlAs(noRights, password, other) }),
      `user '${noRights}' may not use or create database '${other}' on ${hostPort} (create it and GRANT ALL ON \`${other}\`.* TO '${noRights}', or set DATABASE_URL)`,
    );
  });

  it("a user who may not create tables is told at migration, with the way out", async () => {
    const line = new RegExp(
      `^user '${readOnly}' may not change the schema of '${database}' on ${hostPort} \\(GRANT ALL ON \`${database}\`\\.\\* TO '${readOnly}', or run \`npm run migrate\` as a user who may and set MIGRATE_ON_START=false\\): CREATE command denied`,
    );
    expectOneLine(await service({ DATABASE_URL: urlAs(readOnly) }), line);
    // The job that migrates says the same.
    expectOneLine(
      await runEntryPoint("scripts/migrate.ts", { env: { DATABASE_URL: urlAs(readOnly) } }),
      line,
    );
  });

  it("npm run seed:demo with a refused login: one line", async () => {
    expectOneLine(
      await runEntryPoint("scripts/seed-demo.ts", {
        env: { DATABASE_URL: urlAs(noRights, "wrong") },
      }),
      /refused the login of user/,
    );
  });
});
