import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createConnection } from "mysql2/promise";
import { describe, expect, inject, it } from "vitest";
import { dropDatabase } from "../../src/db/connect.js";
import { withDatabase } from "./support/replicas.js";

/**
 * Real service processes (`node --import tsx src/main.ts`, as the image runs
 * it) started at once on an empty database: three on three Galera nodes,
 * three on one server. Every one must become ready (/readyz 200) with the
 * migrations applied once. Ports 18400-18499.
 */
const cluster = inject("cluster");
const SECRET = "cluster-test-secret-cluster-test-secret";
let nextPort = 18400 + Math.floor(Math.random() * 20);

interface Started {
  child: ChildProcess;
  port: number;
  output: string[];
}

function startService(url: string, env: Record<string, string> = {}): Started {
  const port = nextPort++;
  const output: string[] = [];
  const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
    env: {
      ...process.env,
      DATABASE_URL: url,
      PORT: String(port),
      METRICS_PORT: "0",
      HOST: "127.0.0.1",
      NODE_ENV: "production",
      JWT_SECRET: SECRET,
      LOG_LEVEL: "warn",
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stdout?.on("data", (d) => output.push(String(d)));
  child.stderr?.on("data", (d) => output.push(String(d)));
  return { child, port, output };
}

/** Resolves true at the first /readyz 200, false if the process exits or `ms` pass. */
async function becomesReady(s: Started, ms = 90_000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (s.child.exitCode !== null) return false;
    try {
      const res = await fetch(`http://127.0.0.1:${s.port}/readyz`);
      if (res.status === 200) return true;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return false;
}

async function readyz(s: Started): Promise<number> {
  return (await fetch(`http://127.0.0.1:${s.port}/readyz`)).status;
}

async function stop(s: Started): Promise<void> {
  if (s.child.exitCode !== null || s.child.signalCode !== null) return;
  const exited = new Promise((resolve) => s.child.once("exit", resolve));
  s.child.kill("SIGTERM");
  const timer = setTimeout(() => s.child.kill("SIGKILL"), 15_000);
  await exited;
  clearTimeout(timer);
}

/** Applied migrations and lock rows left, read through `serverUrl`. */
async function migrationState(url: string) {
  const c = await createConnection({ uri: url });
  try {
    const [applied] = await c.query("SELECT name FROM kysely_migration ORDER BY name");
    const [locks] = await c.query(
      "SELECT COUNT(*) AS n FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'practice_migration_lock'",
    );
    const hasLockTable = Number((locks as { n: number }[])[0]?.n) > 0;
    const [rows] = hasLockTable
      ? await c.query("SELECT * FROM practice_migration_lock")
      : [[] as unknown[]];
    return { applied: (applied as unknown[]).length, locksLeft: (rows as unknown[]).length };
  } finally {
    await c.end();
  }
}

async function trial(nodes: string[]) {
  const name = `practice_migrate_${randomBytes(5).toString("hex")}`;
  const t0 = performance.now();
  const services = nodes.map((node) => startService(withDatabase(node, name)));
  try {
    const ready = await Promise.all(services.map((s) => becomesReady(s)));
    const seconds = (performance.now() - t0) / 1000;
    const state = await migrationState(withDatabase(nodes[0] ?? "", name));
    const failed = services.filter((_, i) => !ready[i]).map((s) => s.output.join("").slice(-2000));
    return { ready: ready.filter(Boolean).length, seconds, ...state, failed };
  } finally {
    await Promise.all(services.map(stop));
    await dropDatabase(withDatabase(nodes[0] ?? "", name));
  }
}

describe("three replicas migrating at once on an empty database", () => {
  for (const [where, nodes, trials] of [
    ["3 Galera nodes", () => cluster.galera, 3],
    ["one server", () => [cluster.primary, cluster.primary, cluster.primary], 2],
  ] as const) {
    it(`all become ready, on ${where}`, async () => {
      const results = [];
      for (let t = 0; t < trials; t++) results.push(await trial([...nodes()]));
      console.log(
        `[migrate] ${where}: ${trials} trials of 3 processes: ready ${results.map((r) => `${r.ready}/3`).join(", ")}; migrations recorded ${results.map((r) => r.applied).join(", ")}; lock rows left ${results.reduce((n, r) => n + r.locksLeft, 0)}; all ready in ${results.map((r) => `${r.seconds.toFixed(1)} s`).join(", ")}`,
      );
      for (const r of results) {
        expect(r.failed).toEqual([]);
        expect(r.ready).toBe(3);
        expect(r.locksLeft).toBe(0);
      }
    });
  }

  it("with MIGRATE_ON_START=false, a replica is not ready until `npm run migrate` has run", async () => {
    const url = withDatabase(
      nth0(cluster.galera),
      `practice_migrate_${randomBytes(5).toString("hex")}`,
    );
    const service = startService(url, { MIGRATE_ON_START: "false" });
    try {
      // Listening (liveness) but not ready: the tables are not there.
      const deadline = Date.now() + 60_000;
      let live = false;
      while (!live && Date.now() < deadline) {
        live = await fetch(`http://127.0.0.1:${service.port}/healthz`).then(
          (r) => r.ok,
          () => false,
        );
        if (!live) await new Promise((resolve) => setTimeout(resolve, 200));
      }
      expect(live).toBe(true);
      expect(await readyz(service)).toBe(503);
      const job = spawn(process.execPath, ["--import", "tsx", "scripts/migrate.ts"], {
        env: { ...process.env, DATABASE_URL: url },
        stdio: "ignore",
      });
      const code = await new Promise((resolve) => job.once("exit", resolve));
      expect(code).toBe(0);
      expect(await becomesReady(service, 10_000)).toBe(true);
    } finally {
      await stop(service);
      await dropDatabase(url);
    }
  });
});

function nth0(list: readonly string[]): string {
  const [first] = list;
  if (first === undefined) throw new Error("no node");
  return first;
}
