import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import { sql } from "kysely";
import { createConnection } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  Health,
  HealthCheckRequestSchema,
  type HealthCheckResponse,
  HealthCheckResponseSchema,
  HealthCheckResponse_ServingStatus as ServingStatus,
} from "../../gen/grpc/health/v1/health_pb.js";
import { HealthMonitor } from "../../src/ops/health.js";
import { testStore } from "../support/database.js";
import { createGrpcClient } from "../support/grpc-client.js";
import { startTestService, type TestService } from "../support/service.js";

let svc: TestService;
let health: ReturnType<typeof createGrpcClient<typeof Health>>;

beforeAll(async () => {
  // Cutting the database connection needs MySQL; SQLite runs the rest.
  svc = await startTestService({ proxy: testStore() === "mysql" });
  health = createGrpcClient(Health, new URL(svc.baseUrl).host);
});
afterAll(async () => {
  health?.close();
  await svc?.close();
});

/** Polls `read` until it returns `want` (the health probe is cached for 1 s). */
async function eventually<T>(read: () => Promise<T>, want: T, ms = 5000): Promise<T> {
  const deadline = Date.now() + ms;
  let got = await read();
  while (got !== want && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    got = await read();
  }
  return got;
}

const check = async (service = "") => (await health.check({ service })).status;
const readyz = async () => (await fetch(`${svc.baseUrl}/readyz`)).status;

/** A grpc-js Watch stream: its messages so far, and how it ended. */
function watch(service: string) {
  const client = new grpc.Client(new URL(svc.baseUrl).host, grpc.credentials.createInsecure());
  const seen: ServingStatus[] = [];
  const call = client.makeServerStreamRequest(
    "/grpc.health.v1.Health/Watch",
    (m: object) => Buffer.from(toBinary(HealthCheckRequestSchema, m as never)),
    (b: Buffer) => fromBinary(HealthCheckResponseSchema, b),
    create(HealthCheckRequestSchema, { service }),
  );
  call.on("data", (m: HealthCheckResponse) => seen.push(m.status));
  // A non-OK end is also an 'error' event: its status is read below.
  call.on("error", () => {});
  const ended = new Promise<grpc.StatusObject>((resolve) => call.on("status", resolve));
  const last = () => seen.at(-1);
  return { seen, last, ended, close: () => client.close() };
}

describe("health", () => {
  it("answers Check SERVING with no token, for the server and for the practice service", async () => {
    expect(await check()).toBe(ServingStatus.SERVING);
    expect(await check("practice.v1.PracticeSessionService")).toBe(ServingStatus.SERVING);
    await expect(check("no.such.Service")).rejects.toMatchObject({ code: grpc.status.NOT_FOUND });

    // Connect JSON over HTTP/1.1 too: same service, no auth.
    const res = await fetch(`${svc.baseUrl}/grpc.health.v1.Health/Check`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expect(await res.json()).toEqual({ status: "SERVING" });
  });

  it("answers /healthz and /readyz 200 with no token", async () => {
    const live = await fetch(`${svc.baseUrl}/healthz`);
    expect(live.status).toBe(200);
    expect(await live.json()).toEqual({ status: "ok" });
    const ready = await fetch(`${svc.baseUrl}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: "ready" });
  });

  it.skipIf(testStore() === "sqlite")(
    "reports NOT_SERVING and /readyz 503 while the database is down, SERVING once it is back",
    async () => {
      const watcher = watch("");
      await eventually(async () => watcher.last(), ServingStatus.SERVING);
      await svc.proxy?.cut();
      try {
        expect(await eventually(check, ServingStatus.NOT_SERVING)).toBe(ServingStatus.NOT_SERVING);
        expect(await eventually(readyz, 503)).toBe(503);
        const res = await fetch(`${svc.baseUrl}/readyz`);
        expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
        expect(await res.json()).toMatchObject({ status: 503, code: "unavailable" });
        // The process is up all the same: liveness must not restart it for a database outage.
        expect((await fetch(`${svc.baseUrl}/healthz`)).status).toBe(200);
        expect(await eventually(async () => watcher.last(), ServingStatus.NOT_SERVING)).toBe(
          ServingStatus.NOT_SERVING,
        );
      } finally {
        await svc.proxy?.restore();
      }
      expect(await eventually(check, ServingStatus.SERVING)).toBe(ServingStatus.SERVING);
      expect(await eventually(readyz, 200)).toBe(200);
      expect(await eventually(async () => watcher.last(), ServingStatus.SERVING)).toBe(
        ServingStatus.SERVING,
      );
      expect(watcher.seen).toEqual([
        ServingStatus.SERVING,
        ServingStatus.NOT_SERVING,
        ServingStatus.SERVING,
      ]);
      watcher.close();
    },
  );

  it.skipIf(testStore() === "sqlite")(
    "is not ready while a real table cannot be read, though SELECT 1 answers",
    async () => {
      expect(await eventually(readyz, 200)).toBe(200);
      const locker = await createConnection({ uri: svc.database.url });
      await locker.query("LOCK TABLES practice_sessions WRITE");
      try {
        expect(await eventually(readyz, 503)).toBe(503);
        expect(await eventually(check, ServingStatus.NOT_SERVING)).toBe(ServingStatus.NOT_SERVING);
        // The process is up: liveness says so.
        expect((await fetch(`${svc.baseUrl}/healthz`)).status).toBe(200);
      } finally {
        await locker.query("UNLOCK TABLES");
        await locker.end();
      }
      expect(await eventually(readyz, 200)).toBe(200);
    },
  );

  it.skipIf(testStore() === "sqlite")(
    "answers NOT_SERVING and /readyz 503 1.5 s after the database freezes, after a quiet spell with no probe",
    async () => {
      expect(await eventually(readyz, 200)).toBe(200);
      // Nobody asks for a while: the answer must not be the last one cached.
      await new Promise((r) => setTimeout(r, 3000));
      const locker = await createConnection({ uri: svc.database.url });
      await locker.query("LOCK TABLES practice_sessions WRITE");
      try {
        await new Promise((r) => setTimeout(r, 1500));
        // The first answers after the freeze, asked together.
        const [status, grpcStatus] = await Promise.all([readyz(), check()]);
        expect(status).toBe(503);
        expect(grpcStatus).toBe(ServingStatus.NOT_SERVING);
      } finally {
        await locker.query("UNLOCK TABLES");
        await locker.end();
      }
      expect(await eventually(readyz, 200)).toBe(200);
    },
  );

  it("is not ready while the sessions table is gone (renamed away under the running service), ready again once it is back", async () => {
    expect(await eventually(readyz, 200)).toBe(200);
    const rename = (from: string, to: string) =>
      testStore() === "mysql"
        ? sql`RENAME TABLE ${sql.table(from)} TO ${sql.table(to)}`.execute(svc.db)
        : sql`ALTER TABLE ${sql.table(from)} RENAME TO ${sql.table(to)}`.execute(svc.db);
    await rename("practice_sessions", "practice_sessions_away");
    try {
      expect(await eventually(readyz, 503)).toBe(503);
      expect(await eventually(check, ServingStatus.NOT_SERVING)).toBe(ServingStatus.NOT_SERVING);
      // The process is up: liveness says so.
      expect((await fetch(`${svc.baseUrl}/healthz`)).status).toBe(200);
    } finally {
      await rename("practice_sessions_away", "practice_sessions");
    }
    expect(await eventually(readyz, 200)).toBe(200);
    expect(await eventually(check, ServingStatus.SERVING)).toBe(ServingStatus.SERVING);
  });

  it("is not ready when it starts with a migration not applied (checked once, at start-up)", async () => {
    const { rows } = await sql<{ name: string }>`SELECT name FROM kysely_migration`.execute(svc.db);
    const name = rows[0]?.name ?? "";
    await sql`DELETE FROM kysely_migration WHERE name = ${name}`.execute(svc.db);
    try {
      // What a replica starting now would say.
      const starting = new HealthMonitor(svc.db);
      expect(await starting.checkMigrations()).toBe(false);
      expect(await starting.ready()).toBe(false);
      // The running one checked at its start: no information_schema query per probe.
      expect(await readyz()).toBe(200);
    } finally {
      await sql`INSERT INTO kysely_migration (name, timestamp) VALUES (${name}, ${new Date().toISOString()})`.execute(
        svc.db,
      );
    }
    expect(await new HealthMonitor(svc.db).ready()).toBe(true);
  });

  it.skipIf(testStore() === "sqlite")(
    "answers /readyz 200 at once while every connection of the users' pool is busy",
    async () => {
      // The service's pool (5 connections) all sleeping: users wait, the probe must not.
      const sleepers = Array.from({ length: 5 }, () => sql`SELECT SLEEP(2)`.execute(svc.serviceDb));
      await new Promise((r) => setTimeout(r, 1200));
      const statuses: number[] = [];
      for (let i = 0; i < 10; i++) statuses.push(await readyz());
      await Promise.all(sleepers);
      expect(statuses).toEqual(statuses.map(() => 200));
    },
  );

  it("tells Watch SERVICE_UNKNOWN for an unknown service, and NOT_SERVING then the end when draining", async () => {
    const unknown = watch("no.such.Service");
    const watcher = watch("practice.v1.PracticeSessionService");
    await eventually(async () => unknown.last(), ServingStatus.SERVICE_UNKNOWN);
    await eventually(async () => watcher.last(), ServingStatus.SERVING);
    svc.health.startDraining();
    const status = await watcher.ended;
    expect(status.code).toBe(grpc.status.UNAVAILABLE);
    expect(watcher.seen).toEqual([ServingStatus.SERVING, ServingStatus.NOT_SERVING]);
    expect(unknown.seen).toEqual([ServingStatus.SERVICE_UNKNOWN]);
    expect(await check()).toBe(ServingStatus.NOT_SERVING);
    expect(await readyz()).toBe(503);
    unknown.close();
    watcher.close();
  });
});
