import type { AddressInfo } from "node:net";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { type Logger, pino } from "pino";
import { PracticeSessionService } from "../../gen/practice/v1/practice_session_service_pb.js";
import { QuizService } from "../../gen/practice/v1/quiz_service_pb.js";
import { createAuthenticator } from "../../src/auth/authenticator.js";
import { signToken } from "../../src/auth/tokens.js";
import type { JwtConfig, TrustProxy } from "../../src/config.js";
import { admissionConfig } from "../../src/config.js";
import { openDatabase } from "../../src/db/connect.js";
import { FakeClock } from "../../src/domain/clock.js";
import { statementLimits } from "../../src/edge/call-limits.js";
import { metricsListener } from "../../src/edge/metrics-listener.js";
import { type OnePortOptions, servePort } from "../../src/edge/one-port.js";
import type { Admission } from "../../src/ops/admission.js";
import { HealthMonitor } from "../../src/ops/health.js";
import { Metrics } from "../../src/ops/metrics.js";
import type { StreamLimits } from "../../src/rpc/stream-limits.js";
import { buildApp } from "../../src/server.js";
import type { PracticePageFiles } from "../../src/web/practice-page.js";
import { createTestDatabase, type TestDatabase } from "./database.js";
import { createGrpcClient } from "./grpc-client.js";
import { defaultAppSettings, defaultDatabaseLimits } from "./settings.js";
import { TcpProxy } from "./tcp-proxy.js";

export const TEST_SECRET = "test-secret-test-secret-test-secret-0123";

export interface TestService {
  database: TestDatabase;
  /** Direct access to the test database (never through the proxy). */
  db: TestDatabase["db"];
  /** Set with `{ proxy: true }`: the service's path to the database. */
  proxy: TcpProxy | undefined;
  /** The service's own database handle (through the proxy, if any): its pool, as users use it. */
  serviceDb: TestDatabase["db"];
  /** The mysql2 pool under `serviceDb`; none for SQLite. */
  servicePool: TestDatabase["pool"];
  /** The service's health state (drain it with `startDraining()`). */
  health: HealthMonitor;
  /** The service's clock: starts at the real time, moves only when told. */
  clock: FakeClock;
  baseUrl: string;
  /** The `/metrics` listener's base URL (a port of its own). */
  metricsUrl: string;
  /** A valid token for user `sub`. */
  token(sub: string): Promise<string>;
  /** REST call with a bearer token for `user`. */
  rest(user: string | null, method: string, path: string, init?: RequestInit): Promise<Response>;
  connect: ReturnType<typeof createClient<typeof PracticeSessionService>>;
  grpcWeb: ReturnType<typeof createClient<typeof PracticeSessionService>>;
  grpc: ReturnType<typeof createGrpcClient<typeof PracticeSessionService>>;
  /** QuizService over Connect (HTTP/2) and over gRPC (grpc-js). */
  quizConnect: ReturnType<typeof createClient<typeof QuizService>>;
  quizGrpc: ReturnType<typeof createGrpcClient<typeof QuizService>>;
  /** Headers for Connect clients: `{ headers: auth(user) }`. */
  auth(user: string): Promise<Record<string, string>>;
  close(): Promise<void>;
}

/**
 * Admission limits that admit every caller of the race and fault suites (up
 * to 1,000 at once, one user's included): the service's own for a pool of
 * 10, with no bound on one caller's waiting calls (races are one user's).
 */
export const RACE_ADMISSION = {
  ...admissionConfig({}, 10),
  maxQueuedPerUser: 1000,
};

export interface TestServiceOptions {
  /** Reach the database through a TCP proxy the test can cut (svc.proxy). */
  proxy?: boolean;
  /** Where the service logs; silent by default (TEST_LOG_LEVEL to see it). */
  logger?: Logger;
  requestTimeoutMs?: number;
  corsOrigins?: string[];
  /**
   * How the service verifies tokens, and how `token()` signs them for it.
   * Default: HS256 with TEST_SECRET.
   */
  auth?: { config: JwtConfig; sign: (sub: string, now: Date) => Promise<string> };
  /** What every refusal of a credential adds (a development start's `TOKEN_HINT`). */
  tokenHint?: string;
  /** With `proxy`: connections in the service's pool through it (default 5). */
  poolSize?: number;
  /** Caps on Watch and reflection streams (default: the service's). */
  streamLimits?: StreamLimits;
  /** Admission control (default: the service's, for a pool of 10). */
  admission?: Admission;
  /** The edge's limits (src/config.ts `edgeConfig`); default the service's. */
  edge?: OnePortOptions["edge"];
  /** Connections the port holds at once (one-port.ts); default the service's. */
  maxConnections?: number;
  /** Statement time limit of the proxied pool (default: the service's). */
  queryTimeoutMs?: number;
  /** Whose X-Forwarded-For names the caller (TRUST_PROXY); default nobody's. */
  trustProxy?: TrustProxy;
  /** A built practice page to serve at `/practice/`. */
  practicePage?: PracticePageFiles;
}

/** The whole service, on a fresh database, listening on a free port of 127.0.0.1. */
export async function startTestService(options: TestServiceOptions = {}): Promise<TestService> {
  const database = await createTestDatabase();
  let db = database.db;
  let pool = database.pool;
  let proxy: TcpProxy | undefined;
  let closeDb = async () => {};
  let probe: (() => Promise<void>) | undefined;
  if (options.proxy) {
    if (database.store !== "mysql") throw new Error("a TCP proxy needs a MySQL test database");
    const url = new URL(database.url);
    proxy = new TcpProxy(url.hostname, Number(url.port || 3306));
    await proxy.start();
    url.host = `127.0.0.1:${proxy.port}`;
    const handle = openDatabase({
      url: url.toString(),
      poolSize: options.poolSize ?? 5,
      connectTimeoutMs: 1000,
      limits:
        options.queryTimeoutMs === undefined
          ? defaultDatabaseLimits()
          : statementLimits(options.queryTimeoutMs),
    });
    db = handle.db;
    pool = handle.pool;
    closeDb = handle.close;
    probe = handle.probe;
  }
  const clock = new FakeClock(new Date());
  const health = new HealthMonitor(db, { probe });
  const metrics = new Metrics(pool);
  const defaults = defaultAppSettings();
  const app = await buildApp({
    ...defaults,
    metrics,
    db,
    pool,
    health,
    clock,
    authenticator: createAuthenticator(options.auth?.config ?? { secret: TEST_SECRET }, clock, {
      hint: options.tokenHint,
    }),
    logger: options.logger ?? pino({ level: process.env.TEST_LOG_LEVEL ?? "silent" }),
    requestTimeoutMs: options.requestTimeoutMs ?? defaults.requestTimeoutMs,
    corsOrigins: options.corsOrigins,
    trustProxy: options.trustProxy,
    streamLimits: options.streamLimits,
    admission: options.admission ?? defaults.admission,
    practicePage: options.practicePage,
  });
  const port = servePort(app, { maxConnections: options.maxConnections, edge: options.edge });
  await port.listen(0, "127.0.0.1");
  const { port: portNumber } = port.server.address() as AddressInfo;
  const baseUrl = `http://127.0.0.1:${portNumber}`;
  const scrape = metricsListener(metrics, health);
  await new Promise<void>((resolve) => scrape.listen(0, "127.0.0.1", resolve));
  const metricsUrl = `http://127.0.0.1:${(scrape.address() as AddressInfo).port}`;
  const token = (sub: string) =>
    options.auth
      ? options.auth.sign(sub, clock.now())
      : signToken(TEST_SECRET, sub, { now: clock.now() });
  const calls = callers(baseUrl, token);
  const quizGrpc = createGrpcClient(QuizService, `127.0.0.1:${portNumber}`);
  return {
    database,
    db: database.db,
    proxy,
    serviceDb: db,
    servicePool: pool,
    health,
    clock,
    baseUrl,
    metricsUrl,
    ...calls,
    quizConnect: createClient(QuizService, createConnectTransport({ baseUrl, httpVersion: "2" })),
    quizGrpc,
    async close() {
      health.stop();
      calls.grpc.close();
      quizGrpc.close();
      await port.close(1000);
      await proxy?.cut();
      await closeDb();
      await database.drop();
    },
  };
}

/** How a test calls a service at `baseUrl` as a user: tokens, REST, Connect, gRPC-Web and gRPC. */
export function callers(baseUrl: string, token: (sub: string) => Promise<string>) {
  return {
    token,
    auth: async (user: string) => ({ authorization: `Bearer ${await token(user)}` }),
    async rest(user: string | null, method: string, path: string, init: RequestInit = {}) {
      const headers = new Headers(init.headers);
      if (user !== null) headers.set("authorization", `Bearer ${await token(user)}`);
      return fetch(`${baseUrl}${path}`, { ...init, method, headers });
    },
    connect: createClient(
      PracticeSessionService,
      createConnectTransport({ baseUrl, httpVersion: "2" }),
    ),
    grpcWeb: createClient(
      PracticeSessionService,
      createGrpcWebTransport({ baseUrl, httpVersion: "1.1" }),
    ),
    grpc: createGrpcClient(PracticeSessionService, `127.0.0.1:${new URL(baseUrl).port}`),
  };
}
