import { type Client, createClient, createRouterTransport } from "@connectrpc/connect";
import { pino } from "pino";
import { afterAll } from "vitest";
import { PracticeSessionService } from "../../gen/practice/v1/practice_session_service_pb.js";
import { QuizService } from "../../gen/practice/v1/quiz_service_pb.js";
import { PracticeSessions } from "../../src/app/practice-sessions.js";
import { Quizzes } from "../../src/app/quizzes.js";
import type { App } from "../../src/app-server.js";
import { createAuthenticator } from "../../src/auth/authenticator.js";
import { signToken } from "../../src/auth/tokens.js";
import { FakeClock } from "../../src/domain/clock.js";
import { REQUEST_TIMEOUT_MS } from "../../src/limits.js";
import { Admission } from "../../src/ops/admission.js";
import { practiceRpc } from "../../src/rpc/practice-routes.js";
import { buildApp } from "../../src/server.js";
import { createTestDatabase, type TestDatabase } from "./database.js";
import { detachedCalls } from "./detached-call.js";
import { RACE_ADMISSION, TEST_SECRET } from "./service.js";
import { defaultAppSettings } from "./settings.js";

/**
 * The service without a socket: the use cases, the Connect routes through
 * `createRouterTransport`, and the Fastify app through `app.inject()`, all on
 * one fresh database (in-memory SQLite, or MySQL in the mysql project) and
 * one fake clock. For rules and mappings; transports, TLS, limits and
 * shutdown need the socket of startTestService().
 */
export interface InProcessService {
  database: TestDatabase;
  db: TestDatabase["db"];
  /** Starts at the real time, moves only when told. */
  clock: FakeClock;
  /** The use cases, called directly. */
  sessions: PracticeSessions;
  /** The built app (never listening). */
  app: App;
  /** A valid token for user `sub`. */
  token(sub: string): Promise<string>;
  /** Headers for RPC calls: `{ headers: await auth(user) }`. */
  auth(user: string): Promise<Record<string, string>>;
  /** REST call through `app.inject()`, with a bearer token for `user` (none for null). */
  rest(user: string | null, method: string, path: string, init?: RestInit): Promise<Response>;
  /** PracticeSessionService through the in-memory router: the service's routes and interceptors. */
  rpc: Client<typeof PracticeSessionService>;
  /** QuizService, the same way. */
  quizRpc: Client<typeof QuizService>;
  close(): Promise<void>;
}

export interface RestInit {
  headers?: ConstructorParameters<typeof Headers>[0];
  body?: string;
}

/** A fresh in-process service. */
export async function startInProcessService(): Promise<InProcessService> {
  const database = await createTestDatabase();
  const clock = new FakeClock(new Date());
  const authenticator = createAuthenticator({ secret: TEST_SECRET }, clock);
  const sessions = new PracticeSessions(database.db, clock);
  const app = await buildApp({
    ...defaultAppSettings(),
    db: database.db,
    // Use-case tests race dozens of calls: admit them all (admission has its own tests).
    admission: new Admission(RACE_ADMISSION),
    clock,
    authenticator,
    logger: pino({ level: process.env.TEST_LOG_LEVEL ?? "silent" }),
  });
  const { routes, interceptors } = practiceRpc({
    sessions,
    quizzes: new Quizzes(database.db, undefined, clock),
    authenticator,
  });
  // The edge's call, as the service makes it: first, so every interceptor sees it.
  const calls = detachedCalls(new Admission(RACE_ADMISSION), REQUEST_TIMEOUT_MS);
  const transport = createRouterTransport(routes, {
    router: { interceptors: [calls, ...interceptors] },
  });
  const rpc = createClient(PracticeSessionService, transport);
  const quizRpc = createClient(QuizService, transport);
  const token = (sub: string) => signToken(TEST_SECRET, sub, { now: clock.now() });
  return {
    database,
    db: database.db,
    clock,
    sessions,
    app,
    token,
    auth: async (user) => ({ authorization: `Bearer ${await token(user)}` }),
    async rest(user, method, path, init = {}) {
      const headers = Object.fromEntries(new Headers(init.headers));
      if (user !== null) headers.authorization = `Bearer ${await token(user)}`;
      const res = await app.inject({
        method: method as "GET",
        url: path,
        headers,
        payload: init.body,
      });
      const out = new Headers();
      for (const [name, value] of Object.entries(res.headers)) {
        for (const v of Array.isArray(value) ? value : [value]) {
          if (v !== undefined) out.append(name, String(v));
        }
      }
      const empty = res.statusCode === 204 || res.statusCode === 304 || method === "HEAD";
      return new Response(empty ? null : res.rawPayload, { status: res.statusCode, headers: out });
    },
    rpc,
    quizRpc,
    async close() {
      await app.close();
      await database.drop();
    },
  };
}

/**
 * The calling test file's own service, started as the file loads and closed
 * after its tests: files never see each other's rows.
 */
export async function fileService(): Promise<InProcessService> {
  const svc = await startInProcessService();
  afterAll(() => svc.close());
  return svc;
}

/** A new user name at each call (`${prefix}-1`, `${prefix}-2`, ...): tests never share a user. */
export function userNames(prefix: string): () => string {
  let count = 0;
  return () => `${prefix}-${++count}`;
}
