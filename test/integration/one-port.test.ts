import { createServer as createHttpServer } from "node:http";
import { pino } from "pino";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createAuthenticator } from "../../src/auth/authenticator.js";
import { FakeClock } from "../../src/domain/clock.js";
import { type OnePortServer, servePort } from "../../src/edge/one-port.js";
import { buildApp } from "../../src/server.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { TEST_SECRET } from "../support/service.js";
import { defaultAppSettings } from "../support/settings.js";

let database: TestDatabase;
let port: OnePortServer;

beforeAll(async () => {
  database = await createTestDatabase();
  const clock = new FakeClock(new Date("2026-05-01T10:00:00Z"));
  const app = await buildApp({
    ...defaultAppSettings(),
    db: database.db,
    pool: database.pool,
    clock,
    authenticator: createAuthenticator({ secret: TEST_SECRET }, clock),
    logger: pino({ level: "silent" }),
  });
  port = servePort(app);
});
afterAll(async () => {
  await port?.close(1000);
  await database?.drop();
});

it("accepts sockets without Nagle's delay on small writes, as Node's HTTP/1.1 server does", () => {
  // Node's HTTP/1.1 server asks for it when it accepts a socket, which here the
  // front server does (HTTP/2 sessions ask for it themselves).
  expect((createHttpServer() as unknown as { noDelay: boolean }).noDelay).toBe(true);
  expect((port.server as unknown as { noDelay: boolean }).noDelay).toBe(true);
});
