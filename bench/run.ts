/**
 * `npm run bench`: throughput, latency and cost per request of ListSessions,
 * StartSession and GetQuiz over every transport, next to baselines measured in the
 * same run on the same data. See BENCHMARKS.md for what it does and the
 * environment variables; results go to bench/results/ (JSON and Markdown).
 */

import { execFileSync } from "node:child_process";
import { createHmac } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { gzipSync } from "node:zlib";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { type Client, Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { Kysely, MysqlDialect } from "kysely";
import { createPool as createCallbackPool } from "mysql2";
import { createPool, type Pool } from "mysql2/promise";
import { v7 as uuidv7 } from "uuid";
import {
  ListSessionsRequestSchema,
  ListSessionsResponseSchema,
  PracticeSessionService,
  StartSessionRequestSchema,
  StartSessionResponseSchema,
} from "../gen/practice/v1/practice_session_service_pb.js";
import { GetQuizRequestSchema, GetQuizResponseSchema } from "../gen/practice/v1/quiz_service_pb.js";
import { PracticeSessions } from "../src/app/practice-sessions.js";
import { signToken } from "../src/auth/tokens.js";
import type { Database } from "../src/db/database.js";
import { findLiveQuiz } from "../src/db/quizzes-repository.js";
import { findSessionPage } from "../src/db/session-page.js";
import { systemClock } from "../src/domain/clock.js";
import { decodeCursor } from "../src/domain/cursor.js";
import { type Child, freePort, startChild } from "./lib/children.js";
import { CommandCountingProxy } from "./lib/count-proxy.js";
import { type BenchData, generate, MAIN_USER, RESUME_ANSWERS, RESUME_USER } from "./lib/data.js";
import { StatusReader } from "./lib/db-status.js";
import {
  type Bound,
  bearer,
  type Call,
  closedLoop,
  GrpcLoadClient,
  httpLoad,
  openLoop,
} from "./lib/load.js";
import { cpuMs, rssMiB } from "./lib/proc.js";
import { type LoadResult, median } from "./lib/stats.js";

// ---------------------------------------------------------------- settings
const env = process.env;
const QUICK = env.BENCH_QUICK === "1";
const SERVER_URL = env.BENCH_DATABASE_URL ?? "mysql://root@127.0.0.1:3306/";
const LEVELS = QUICK ? [10, 1_000] : [10, 1_000, 100_000];
if (env.BENCH_MAX && !QUICK) LEVELS.push(Number(env.BENCH_MAX));
const BIG = LEVELS.at(-1) as number;
/** The history size of the main matrices (100,000 unless BENCH_MAX raises it). */
const MAIN_LEVEL = Math.min(BIG, 100_000);
const DURATION_MS = Number(env.BENCH_DURATION_MS ?? (QUICK ? 1000 : 5000));
const ROUNDS = Number(env.BENCH_ROUNDS ?? (QUICK ? 1 : 3));
const SOAK_REQUESTS = Number(env.BENCH_SOAK_REQUESTS ?? (QUICK ? 20_000 : 200_000));
const CREATES = Number(env.BENCH_CREATES ?? (QUICK ? 500 : 2000));
const POOL_SIZE = 10;
const CONCURRENCIES = [1, 16, 64];
const SECRET = "bench-secret-bench-secret-bench-secret-0123";
const LIST_PATH = "/practice.v1.PracticeSessionService/ListSessions";
const START_PATH = "/practice.v1.PracticeSessionService/StartSession";
const QUIZ_PATH = "/practice.v1.QuizService/GetQuiz";
/** `quiz`: only GetQuiz (accounting and timed runs), for a short pass on a shared machine. */
const ONLY = env.BENCH_ONLY;
const PROFILE = env.BENCH_PROFILE === "1";

function log(msg: string): void {
  console.error(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}`);
}

// ---------------------------------------------------------------- records
interface Run {
  section: string;
  target: string;
  scenario: string;
  concurrency: number | string;
  round: number;
  load: LoadResult;
  /** Server process CPU per request (µs); for `raw`, the harness process (client + driver). */
  cpuUsPerReq: number;
  /** Harness (load client) CPU per request (µs): both share the machine's 2 cores. */
  clientCpuUsPerReq: number;
  /** MariaDB process CPU per request (µs), all clients of the server included (noisy). */
  dbCpuUsPerReq: number;
  /** Global Questions delta per request (every client of the server: noisy). */
  questionsPerReq: number;
  /** Global Handler_read_* delta per request (noisy, see accounting for exact counts). */
  handlerReadPerReq: number;
  rssBeforeMiB: number;
  rssAfterMiB: number;
}

interface Accounting {
  target: string;
  scenario: string;
  requests: number;
  /** Exact: commands counted by the proxy between service and database. */
  roundTripsPerReq: number;
  /** Handler_read_* per request, from the cleanest of up to 5 attempts. */
  rowsReadPerReq: number;
  /** True when the global Questions delta equalled the proxy's count (nobody else ran). */
  clean: boolean;
  errors: number;
}

const runs: Run[] = [];
const accounting: Accounting[] = [];
const notes: string[] = [];

// ---------------------------------------------------------------- targets
/** A way to send one kind of request: a factory of calls for a load run. */
interface Target {
  name: string;
  /** Process whose CPU and RSS are charged. */
  pid: () => number;
  /** Closed loop at `c`, or open loop at `rate`. */
  run(c: number, bound: Bound, rate?: number): Promise<LoadResult>;
}

interface Servers {
  svc: Child;
  bare: Child;
  grpc: GrpcLoadClient;
  /** connect-node clients over HTTP/2 (one session each): Connect binary and gRPC. */
  connectH2: Client<typeof PracticeSessionService>;
  grpcConnect: Client<typeof PracticeSessionService>;
}

function connectClients(port: number) {
  const baseUrl = `http://127.0.0.1:${port}`;
  return {
    connectH2: createClient(
      PracticeSessionService,
      createConnectTransport({ baseUrl, httpVersion: "2", useBinaryFormat: true }),
    ),
    grpcConnect: createClient(PracticeSessionService, createGrpcTransport({ baseUrl })),
  };
}

/** A connect-node call as a status label. */
async function connectStatus(call: () => Promise<unknown>): Promise<string> {
  try {
    await call();
    return "OK";
  } catch (err) {
    return err instanceof ConnectError ? Code[err.code] : String(err);
  }
}

function httpTarget(
  name: string,
  child: () => Child,
  req: {
    method: "GET" | "POST";
    path: string;
    headers: Record<string, string>;
    body?: string | Buffer;
    headersFor?: (i: number) => Record<string, string>;
    expect: number;
  },
): Target {
  return {
    name,
    pid: () => child().pid,
    run: (c, bound, rate) =>
      httpLoad({
        url: `http://127.0.0.1:${child().port}${req.path}`,
        method: req.method,
        headers: req.headers,
        body: req.body,
        headersFor: req.headersFor,
        connections: c,
        bound,
        overallRate: rate,
        expect: req.expect,
      }),
  };
}

function callTarget(name: string, pid: () => number, call: Call, expect: string): Target {
  return {
    name,
    pid,
    run: (c, bound, rate) =>
      rate === undefined
        ? closedLoop(call, c, bound, expect)
        : openLoop(call, rate, "durationMs" in bound ? bound.durationMs : 10_000, expect),
  };
}

// ---------------------------------------------------------------- measuring
let status: StatusReader;
let dbPid = 0;

async function measure(
  section: string,
  scenario: string,
  target: Target,
  concurrency: number,
  bound: Bound,
  round: number,
  rate?: number,
): Promise<Run> {
  const pid = target.pid();
  const rssBefore = rssMiB(pid);
  const before = await status.read();
  const cpu0 = cpuMs(pid);
  const me0 = cpuMs(process.pid);
  const db0 = dbPid ? cpuMs(dbPid) : 0;
  const load = await target.run(concurrency, bound, rate);
  const cpu1 = cpuMs(pid);
  const me1 = cpuMs(process.pid);
  const db1 = dbPid ? cpuMs(dbPid) : 0;
  const after = await status.read();
  const n = Math.max(1, load.requests);
  const run: Run = {
    section,
    target: target.name,
    scenario,
    concurrency: rate === undefined ? concurrency : `open ${Math.round(rate)}/s`,
    round,
    load,
    cpuUsPerReq: ((cpu1 - cpu0) * 1000) / n,
    clientCpuUsPerReq: ((me1 - me0) * 1000) / n,
    dbCpuUsPerReq: ((db1 - db0) * 1000) / n,
    questionsPerReq: (after.questions - before.questions - 1) / n,
    handlerReadPerReq: (after.handlerRead - before.handlerRead) / n,
    rssBeforeMiB: rssBefore,
    rssAfterMiB: rssMiB(pid),
  };
  runs.push(run);
  const errs = load.errors ? ` ERRORS ${load.errors} ${JSON.stringify(load.statuses)}` : "";
  log(
    `${section} ${scenario} ${target.name} c=${run.concurrency} r${round}: ${load.rps.toFixed(0)} req/s p50 ${load.p50.toFixed(2)} p99 ${load.p99.toFixed(2)} ms cpu ${run.cpuUsPerReq.toFixed(0)} µs${errs}`,
  );
  return run;
}

// ---------------------------------------------------------------- main
async function main(): Promise<void> {
  log(`levels ${LEVELS.join(", ")}; ${DURATION_MS} ms per run; ${ROUNDS} rounds`);
  const data = await generate(SERVER_URL, LEVELS);
  log(`generated ${data.totalSessions} sessions in ${data.generateSeconds.toFixed(1)} s`);
  status = await StatusReader.open(SERVER_URL);
  try {
    dbPid = Number(execFileSync("pidof", ["mariadbd"]).toString().trim().split(" ")[0]) || 0;
  } catch {
    dbPid = 0;
  }
  const children: Child[] = [];
  try {
    await benchAll(data, children);
  } finally {
    for (const c of children) await c.stop();
    await status.close();
    if (env.BENCH_KEEP !== "1") await data.drop();
  }
  writeResults(data);
}

async function startService(name: string, dbUrl: string, flags: string[] = []): Promise<Child> {
  return startChild(
    name,
    "src/main.ts",
    {
      PORT: String(await freePort()),
      METRICS_PORT: "0",
      HOST: "127.0.0.1",
      DATABASE_URL: dbUrl,
      JWT_SECRET: SECRET,
      LOG_LEVEL: "warn",
      DB_POOL_SIZE: String(POOL_SIZE),
      NODE_ENV: "production",
    },
    flags,
  );
}

async function startBare(name: string, dbUrl: string): Promise<Child> {
  return startChild(name, "bench/servers/bare-fastify.ts", {
    PORT: String(await freePort()),
    DATABASE_URL: dbUrl,
    JWT_SECRET: SECRET,
    DB_POOL_SIZE: String(POOL_SIZE),
  });
}

/** Captured SQL of the service's statements, replayed by the raw mysql2 ceiling. */
interface Captured {
  sql: string;
  parameters: unknown[];
}

async function capture(url: string, run: (db: Kysely<Database>) => Promise<unknown>) {
  const queries: Captured[] = [];
  const pool = createCallbackPool({ uri: url, connectionLimit: 1, timezone: "Z" });
  const db = new Kysely<Database>({
    dialect: new MysqlDialect({ pool }),
    log(event) {
      if (event.level === "query") {
        queries.push({ sql: event.query.sql, parameters: [...event.query.parameters] });
      }
    },
  });
  try {
    await run(db);
  } finally {
    await db.destroy();
  }
  return queries;
}

function listTargets(
  s: () => Servers,
  raw: Pool,
  token: string,
  data: BenchData,
  level: number,
  deep: boolean,
  listSql: Captured,
): Target[] {
  const quizId = data.levelQuiz.get(level) as string;
  const cursor = deep ? (data.deepCursor.get(level) as string) : "";
  const auth = { authorization: `Bearer ${token}` };
  const query = deep ? `?cursor=${cursor}` : "";
  const reqMsg = create(ListSessionsRequestSchema, { quizId, cursor });
  const bin = Buffer.from(toBinary(ListSessionsRequestSchema, reqMsg));
  const md = bearer(token);
  return [
    callTarget(
      "raw mysql2",
      () => process.pid,
      async () => {
        await raw.query(listSql.sql, listSql.parameters);
        return "ok";
      },
      "ok",
    ),
    httpTarget("bare Fastify", () => s().bare, {
      method: "GET",
      path: `/quizzes/${quizId}/sessions${query}`,
      headers: auth,
      expect: 200,
    }),
    httpTarget("bare Fastify + token cache", () => s().bare, {
      method: "GET",
      path: `/cached/quizzes/${quizId}/sessions${query}`,
      headers: auth,
      expect: 200,
    }),
    httpTarget("REST", () => s().svc, {
      method: "GET",
      path: `/quizzes/${quizId}/sessions${query}`,
      headers: auth,
      expect: 200,
    }),
    httpTarget("Connect JSON", () => s().svc, {
      method: "POST",
      path: LIST_PATH,
      headers: { ...auth, "content-type": "application/json", "connect-protocol-version": "1" },
      body: JSON.stringify(deep ? { quizId, cursor } : { quizId }),
      expect: 200,
    }),
    httpTarget("Connect binary", () => s().svc, {
      method: "POST",
      path: LIST_PATH,
      headers: { ...auth, "content-type": "application/proto", "connect-protocol-version": "1" },
      body: bin,
      expect: 200,
    }),
    callTarget(
      "gRPC",
      () => s().svc.pid,
      () => s().grpc.call(LIST_PATH, bin, md),
      "OK",
    ),
    callTarget(
      "Connect binary h2 (connect-node)",
      () => s().svc.pid,
      () => connectStatus(() => s().connectH2.listSessions(reqMsg, { headers: auth })),
      "OK",
    ),
    callTarget(
      "gRPC (connect-node client)",
      () => s().svc.pid,
      () => connectStatus(() => s().grpcConnect.listSessions(reqMsg, { headers: auth })),
      "OK",
    ),
  ];
}

function startTargets(
  s: () => Servers,
  tokenFor: (i: number) => string,
  quizId: string,
  expectCreated: boolean,
  rawCall: (i: number) => Promise<void>,
): Target[] {
  const code = expectCreated ? 201 : 200;
  const bin = Buffer.from(
    toBinary(StartSessionRequestSchema, create(StartSessionRequestSchema, { quizId })),
  );
  const headersFor = (i: number) => ({ authorization: `Bearer ${tokenFor(i)}` });
  return [
    callTarget(
      "raw mysql2",
      () => process.pid,
      async (i) => {
        await rawCall(i);
        return "ok";
      },
      "ok",
    ),
    httpTarget("bare Fastify", () => s().bare, {
      method: "POST",
      path: `/quizzes/${quizId}/sessions`,
      headers: {},
      headersFor,
      expect: code,
    }),
    httpTarget("bare Fastify + token cache", () => s().bare, {
      method: "POST",
      path: `/cached/quizzes/${quizId}/sessions`,
      headers: {},
      headersFor,
      expect: code,
    }),
    httpTarget("REST", () => s().svc, {
      method: "POST",
      path: `/quizzes/${quizId}/sessions`,
      headers: {},
      headersFor,
      expect: code,
    }),
    httpTarget("Connect JSON", () => s().svc, {
      method: "POST",
      path: START_PATH,
      headers: { "content-type": "application/json", "connect-protocol-version": "1" },
      headersFor,
      body: JSON.stringify({ quizId }),
      expect: 200,
    }),
    httpTarget("Connect binary", () => s().svc, {
      method: "POST",
      path: START_PATH,
      headers: { "content-type": "application/proto", "connect-protocol-version": "1" },
      headersFor,
      body: bin,
      expect: 200,
    }),
    callTarget(
      "gRPC",
      () => s().svc.pid,
      (i) => s().grpc.call(START_PATH, bin, bearer(tokenFor(i))),
      "OK",
    ),
  ];
}

/**
 * GetQuiz of a 10-question quiz on every transport of the service, next to
 * the service's own statement in a mysql2 loop. The bare Fastify baseline has
 * no quiz route: the list's baselines say what Fastify + mysql2 cost.
 */
function quizTargets(
  s: () => Servers,
  raw: Pool,
  token: string,
  quizId: string,
  quizSql: Captured,
): Target[] {
  const auth = { authorization: `Bearer ${token}` };
  const reqMsg = create(GetQuizRequestSchema, { quizId });
  const bin = Buffer.from(toBinary(GetQuizRequestSchema, reqMsg));
  const md = bearer(token);
  return [
    callTarget(
      "raw mysql2",
      () => process.pid,
      async () => {
        await raw.query(quizSql.sql, quizSql.parameters);
        return "ok";
      },
      "ok",
    ),
    httpTarget("REST", () => s().svc, {
      method: "GET",
      path: `/quizzes/${quizId}`,
      headers: auth,
      expect: 200,
    }),
    httpTarget("Connect JSON", () => s().svc, {
      method: "POST",
      path: QUIZ_PATH,
      headers: { ...auth, "content-type": "application/json", "connect-protocol-version": "1" },
      body: JSON.stringify({ quizId }),
      expect: 200,
    }),
    httpTarget("Connect binary", () => s().svc, {
      method: "POST",
      path: QUIZ_PATH,
      headers: { ...auth, "content-type": "application/proto", "connect-protocol-version": "1" },
      body: bin,
      expect: 200,
    }),
    callTarget(
      "gRPC",
      () => s().svc.pid,
      () => s().grpc.call(QUIZ_PATH, bin, md),
      "OK",
    ),
  ];
}

async function benchAll(data: BenchData, children: Child[]): Promise<void> {
  const mainToken = await signToken(SECRET, MAIN_USER, { ttlSeconds: 86_400 });
  const resumeToken = await signToken(SECRET, RESUME_USER, { ttlSeconds: 86_400 });

  // The service's own SQL, captured once, for the raw mysql2 ceiling.
  const listSql = new Map<string, Captured>();
  for (const level of LEVELS) {
    for (const deep of [false, true]) {
      const cursor = data.deepCursor.get(level) as string;
      const [q] = await capture(data.url, (db) =>
        findSessionPage(db, {
          userId: MAIN_USER,
          quizId: data.levelQuiz.get(level) as string,
          status: undefined,
          take: 21,
          after: deep ? decodeCursor(cursor) : undefined,
        }),
      );
      listSql.set(`${level}/${deep}`, q as Captured);
    }
  }
  // A resume is the start state, then the snapshot: both statements, in order.
  const resumeSql = await capture(data.url, (db) =>
    new PracticeSessions(db, systemClock).startSession(RESUME_USER, data.startQuiz),
  );
  if (resumeSql.length !== 2) throw new Error(`resume issued ${resumeSql.length} statements`);
  const rawResume = (pool: Pool) => async () => {
    for (const q of resumeSql) await pool.query(q.sql, q.parameters);
  };
  const [quizSql] = await capture(data.url, (db) => findLiveQuiz(db, data.startQuiz));
  const captureUser = "bench-capture-user";
  const captureId = "00000000-0000-7000-8000-000000000000";
  const createLog = await capture(data.url, (db) =>
    new PracticeSessions(db, systemClock, () => captureId).startSession(
      captureUser,
      data.startQuiz,
    ),
  );
  // Kysely also logs the transaction's own statements: keep the four of the service.
  const createSql = createLog.filter((q) => /^\s*(select|insert)/i.test(q.sql));
  if (createSql.length !== 4) {
    throw new Error(`create issued ${createLog.map((q) => q.sql.slice(0, 30)).join(" | ")}`);
  }
  const subst = (q: Captured, user: string, id: string, at: Date) =>
    q.parameters.map((p) =>
      p === captureUser ? user : p === captureId ? id : p instanceof Date ? at : p,
    );
  /** The create path by hand: the service's 4 statements + BEGIN/COMMIT on one connection. */
  const rawCreate = (pool: Pool, prefix: string) => async (i: number) => {
    const user = `${prefix}-${i}`;
    const id = uuidv7();
    const at = new Date();
    const [state, insertSession, insertSnapshot, readSnapshot] = createSql as [
      Captured,
      Captured,
      Captured,
      Captured,
    ];
    await pool.query(state.sql, subst(state, user, id, at));
    const conn = await pool.getConnection();
    try {
      await conn.query("BEGIN");
      await conn.query(insertSession.sql, subst(insertSession, user, id, at));
      await conn.query(insertSnapshot.sql, subst(insertSnapshot, user, id, at));
      await conn.query(readSnapshot.sql, subst(readSnapshot, user, id, at));
      await conn.query("COMMIT");
    } finally {
      conn.release();
    }
  };
  const rawPool = createPool({
    uri: data.url,
    connectionLimit: POOL_SIZE,
    timezone: "Z",
    supportBigNumbers: true,
    bigNumberStrings: true,
  });

  // ------------------------------------------------ accounting (exact round trips)
  await accountingPhase(
    data,
    mainToken,
    resumeToken,
    listSql,
    rawResume,
    rawCreate,
    quizSql as Captured,
  );

  // ------------------------------------------------ timed runs
  const flags = [
    ...(PROFILE ? ["--cpu-prof", "--cpu-prof-dir", "bench/results/profiles"] : []),
    // e.g. BENCH_SERVICE_NODE_FLAGS=--max-old-space-size=64 for the memory soak
    ...(env.BENCH_SERVICE_NODE_FLAGS ?? "").split(" ").filter(Boolean),
  ];
  const svc = await startService("service", data.url, flags);
  children.push(svc);
  const bare = await startBare("bare", data.url);
  children.push(bare);
  const grpc = new GrpcLoadClient(`127.0.0.1:${svc.port}`);
  const servers: Servers = { svc, bare, grpc, ...connectClients(svc.port) };
  const s = () => servers;
  const rssStart = rssMiB(svc.pid);
  await sanityChecks(servers, data, mainToken, resumeToken);

  // GetQuiz: a 10-question quiz, c=1 and c=16.
  const quiz = quizTargets(s, rawPool, mainToken, data.startQuiz, quizSql as Captured);
  for (const t of quiz) await t.run(16, { durationMs: Math.min(2000, DURATION_MS) });
  for (let round = 1; round <= ROUNDS; round++) {
    for (const c of [1, 16]) {
      if (c !== 16 && round > 1) continue;
      for (const t of quiz) {
        await measure("quiz", "10 questions", t, c, { durationMs: DURATION_MS }, round);
      }
    }
  }
  if (ONLY === "quiz") {
    grpc.close();
    await svc.stop();
    children.splice(children.indexOf(svc), 1);
    await rawPool.end();
    return;
  }

  // List: concurrency sweep at the main level, first page.
  const main = listTargets(
    s,
    rawPool,
    mainToken,
    data,
    MAIN_LEVEL,
    false,
    listSql.get(`${MAIN_LEVEL}/false`) as Captured,
  );
  for (const t of main) await t.run(16, { durationMs: Math.min(2000, DURATION_MS) });
  for (let round = 1; round <= ROUNDS; round++) {
    for (const c of CONCURRENCIES) {
      if (c !== 16 && round > 1) continue;
      for (const t of main) {
        await measure("list", `${MAIN_LEVEL} first page`, t, c, { durationMs: DURATION_MS }, round);
      }
    }
  }
  const rssAfterWarm = rssMiB(svc.pid);

  // List: history size, first page and deep cursor, at c=1 (latency) and c=16.
  for (let round = 1; round <= ROUNDS; round++) {
    for (const level of LEVELS) {
      for (const deep of [false, true]) {
        const scenario = `${level} ${deep ? "deep cursor" : "first page"}`;
        const all = listTargets(
          s,
          rawPool,
          mainToken,
          data,
          level,
          deep,
          listSql.get(`${level}/${deep}`) as Captured,
        );
        for (const t of all.filter((x) => ["raw mysql2", "REST", "gRPC"].includes(x.name))) {
          await measure(
            "history",
            scenario,
            t,
            1,
            { durationMs: Math.max(1000, DURATION_MS / 2) },
            round,
          );
        }
      }
    }
  }

  // Start: resume (same user every time) and create (a new user per request).
  const resume = startTargets(s, () => resumeToken, data.startQuiz, false, rawResume(rawPool));
  for (const t of resume) await t.run(16, { durationMs: Math.min(2000, DURATION_MS) });
  for (let round = 1; round <= ROUNDS; round++) {
    for (const t of resume) {
      await measure("start", "resume", t, 16, { durationMs: DURATION_MS }, round);
    }
  }
  for (let round = 1; round <= ROUNDS; round++) {
    const prefix = `bench-create-r${round}`;
    for (const [k, name] of [
      "raw",
      "bare",
      "bare-cached",
      "rest",
      "cjson",
      "cbin",
      "grpc",
    ].entries()) {
      const tokens = await Promise.all(
        Array.from({ length: CREATES }, (_, i) =>
          signToken(SECRET, `${prefix}-${name}-${i}`, { ttlSeconds: 86_400 }),
        ),
      );
      const t = startTargets(
        s,
        (i) => tokens[i] as string,
        data.startQuiz,
        true,
        rawCreate(rawPool, `${prefix}-${name}`),
      )[k] as Target;
      // Our service and the cached baseline have seen each token once already,
      // as they would have for a user's earlier calls: warm their token caches
      // with a request that stops before the database (quiz id "x" is not an id).
      if (name !== "raw" && name !== "bare") {
        const child = name === "bare-cached" ? bare : svc;
        await httpLoad({
          url: `http://127.0.0.1:${child.port}${name === "bare-cached" ? "/cached" : ""}/quizzes/x/sessions`,
          method: "GET",
          headers: {},
          headersFor: (i) => ({ authorization: `Bearer ${tokens[i]}` }),
          connections: 16,
          bound: { amount: CREATES },
          expect: 404,
        });
      }
      await measure("start", "create", t, 16, { amount: CREATES }, round);
    }
  }

  // Soak: RSS after many requests vs after warm-up (before the open loop, which may overload).
  const rest = main.find((x) => x.name === "REST") as Target;
  const soak = await measure(
    "soak",
    `${MAIN_LEVEL} first page`,
    rest,
    16,
    { amount: SOAK_REQUESTS },
    1,
  );
  soakReport = { rssStart, rssAfterWarm, rssAfterSoak: soak.rssAfterMiB, requests: SOAK_REQUESTS };
  // Open loop at 70% of the best closed-loop rate.
  for (const name of ["REST", "gRPC"]) {
    // 70% of the median closed-loop rate at c=16 (the best single run overshoots on a noisy box).
    const typical = median(
      runs
        .filter((r) => r.section === "list" && r.target === name && r.concurrency === 16)
        .map((r) => r.load.rps),
    );
    const rate = Math.round(typical * 0.7);
    const t = main.find((x) => x.name === name) as Target;
    await measure(
      "open",
      `${MAIN_LEVEL} first page`,
      t,
      16,
      { durationMs: 2 * DURATION_MS },
      1,
      rate,
    );
  }

  grpc.close();
  await svc.stop();
  children.splice(children.indexOf(svc), 1);

  await gzipPhase(data, mainToken, children);
  await rawPool.end();
}

let soakReport:
  | { rssStart: number; rssAfterWarm: number; rssAfterSoak: number; requests: number }
  | undefined;
const gzipReport: { variant: string; bytes: number; gzipBytes: number }[] = [];

async function sanityChecks(s: Servers, data: BenchData, mainToken: string, resumeToken: string) {
  const quizId = data.levelQuiz.get(MAIN_LEVEL) as string;
  const auth = { authorization: `Bearer ${mainToken}` };
  for (const base of [`http://127.0.0.1:${s.svc.port}`, `http://127.0.0.1:${s.bare.port}`]) {
    const res = await fetch(`${base}/quizzes/${quizId}/sessions`, { headers: auth });
    const body = (await res.json()) as { sessions: unknown[]; has_more: boolean };
    if (res.status !== 200 || body.sessions.length !== 20 || !body.has_more) {
      throw new Error(
        `sanity: list on ${base} gave ${res.status} ${JSON.stringify(body).slice(0, 200)}`,
      );
    }
    const r2 = await fetch(`${base}/quizzes/${data.startQuiz}/sessions`, {
      method: "POST",
      headers: { authorization: `Bearer ${resumeToken}` },
    });
    const b2 = (await r2.json()) as { answers: unknown[] };
    if (r2.status !== 200 || b2.answers.length !== RESUME_ANSWERS) {
      throw new Error(`sanity: resume on ${base} gave ${r2.status}`);
    }
  }
  const bytes = await s.grpc.callRaw(
    LIST_PATH,
    Buffer.from(toBinary(ListSessionsRequestSchema, create(ListSessionsRequestSchema, { quizId }))),
    bearer(mainToken),
  );
  const page = fromBinary(ListSessionsResponseSchema, bytes);
  if (page.sessions.length !== 20 || !page.hasMore) throw new Error("sanity: gRPC list");
  const started = fromBinary(
    StartSessionResponseSchema,
    await s.grpc.callRaw(
      START_PATH,
      Buffer.from(
        toBinary(
          StartSessionRequestSchema,
          create(StartSessionRequestSchema, { quizId: data.startQuiz }),
        ),
      ),
      bearer(resumeToken),
    ),
  );
  if (started.created || started.session?.answers.length !== RESUME_ANSWERS) {
    throw new Error("sanity: gRPC resume");
  }
  const quizRes = await fetch(`http://127.0.0.1:${s.svc.port}/quizzes/${data.startQuiz}`, {
    headers: auth,
  });
  const quizBody = (await quizRes.json()) as { questions: unknown[] };
  const grpcQuiz = fromBinary(
    GetQuizResponseSchema,
    await s.grpc.callRaw(
      QUIZ_PATH,
      Buffer.from(
        toBinary(GetQuizRequestSchema, create(GetQuizRequestSchema, { quizId: data.startQuiz })),
      ),
      bearer(mainToken),
    ),
  );
  if (quizRes.status !== 200 || quizBody.questions.length !== 10) {
    throw new Error(`sanity: REST quiz gave ${quizRes.status}`);
  }
  if (grpcQuiz.quiz?.questions.length !== 10) throw new Error("sanity: gRPC quiz");
  log("sanity checks passed (REST, bare, gRPC list, resume and quiz)");
}

async function accountingPhase(
  data: BenchData,
  mainToken: string,
  resumeToken: string,
  listSql: Map<string, Captured>,
  rawResume: (pool: Pool) => () => Promise<void>,
  rawCreate: (pool: Pool, prefix: string) => (i: number) => Promise<void>,
  quizSql: Captured,
): Promise<void> {
  const url = new URL(data.url);
  const proxy = new CommandCountingProxy(url.hostname, Number(url.port || 3306));
  await proxy.start();
  url.host = `127.0.0.1:${proxy.port}`;
  const proxied = url.toString();
  const svc = await startService("service (counted)", proxied);
  const bare = await startBare("bare (counted)", proxied);
  const grpc = new GrpcLoadClient(`127.0.0.1:${svc.port}`);
  const rawPool = createPool({ uri: proxied, connectionLimit: 2, timezone: "Z" });
  const s = () => ({ svc, bare, grpc, ...connectClients(svc.port) });
  const K = QUICK ? 50 : 200;
  try {
    // Calibrate: what reading the counters costs by itself.
    let qOff = Number.POSITIVE_INFINITY;
    let hOff = Number.POSITIVE_INFINITY;
    for (let i = 0; i < 5; i++) {
      const a = await status.read();
      const b = await status.read();
      qOff = Math.min(qOff, b.questions - a.questions);
      hOff = Math.min(hOff, b.handlerRead - a.handlerRead);
    }
    const account = async (scenario: string, t: Target, n: number, fresh?: () => Target) => {
      let best: Accounting | undefined;
      for (let attempt = 0; attempt < 5; attempt++) {
        const target = fresh ? fresh() : t;
        await target.run(1, { amount: 3 }); // connections and statement cache warm
        const t2 = fresh ? fresh() : target;
        proxy.commands = 0;
        const a = await status.read();
        const load = await t2.run(1, { amount: n });
        const b = await status.read();
        const commands = proxy.commands;
        const clean = b.questions - a.questions - qOff === commands;
        const rows = (b.handlerRead - a.handlerRead - hOff) / load.requests;
        const rec: Accounting = {
          target: t.name,
          scenario,
          requests: load.requests,
          roundTripsPerReq: commands / load.requests,
          rowsReadPerReq: rows,
          clean,
          errors: load.errors,
        };
        if (!best || (clean && !best.clean) || (clean === best.clean && rows < best.rowsReadPerReq))
          best = rec;
        if (clean) break;
      }
      accounting.push(best as Accounting);
      log(
        `accounting ${scenario} ${t.name}: ${best?.roundTripsPerReq.toFixed(2)} round trips, ${best?.rowsReadPerReq.toFixed(1)} rows read${best?.clean ? "" : " (other clients were active)"}`,
      );
    };
    const pick = (ts: Target[], names: string[]) => ts.filter((t) => names.includes(t.name));
    for (const t of quizTargets(s, rawPool, mainToken, data.startQuiz, quizSql)) {
      await account("get quiz", t, K);
    }
    if (ONLY === "quiz") return;
    for (const level of LEVELS) {
      for (const deep of [false, true]) {
        const ts = listTargets(
          s,
          rawPool,
          mainToken,
          data,
          level,
          deep,
          listSql.get(`${level}/${deep}`) as Captured,
        );
        const names = level === MAIN_LEVEL ? ts.map((t) => t.name) : ["raw mysql2", "REST", "gRPC"];
        for (const t of pick(ts, names))
          await account(`list ${level} ${deep ? "deep cursor" : "first page"}`, t, K);
      }
    }
    const resume = startTargets(s, () => resumeToken, data.startQuiz, false, rawResume(rawPool));
    for (const t of resume) await account("start resume", t, K);
    let gen = 0;
    const names = [
      "raw mysql2",
      "bare Fastify",
      "bare Fastify + token cache",
      "REST",
      "Connect JSON",
      "Connect binary",
      "gRPC",
    ];
    for (const [k, name] of names.entries()) {
      const fresh = () => {
        const prefix = `bench-acct-${k}-${gen++}`;
        const tokens = new Map<number, string>();
        // Tokens are signed on first use; signing is client-side work.
        const tokenFor = (i: number) => {
          let tok = tokens.get(i);
          if (tok === undefined) {
            tok = signTokenSync(`${prefix}-${i}`);
            tokens.set(i, tok);
          }
          return tok;
        };
        return startTargets(s, tokenFor, data.startQuiz, true, rawCreate(rawPool, prefix))[
          k
        ] as Target;
      };
      await account(
        "start create",
        {
          name,
          pid: () => 0,
          run: async () => {
            throw new Error("unused");
          },
        },
        K,
        fresh,
      );
    }
  } finally {
    grpc.close();
    await svc.stop();
    await bare.stop();
    await rawPool.end();
    await proxy.stop();
  }
}

/** An HS256 token signed synchronously with node:crypto (jose verifies it like its own). */
function signTokenSync(sub: string): string {
  const now = Math.floor(Date.now() / 1000);
  const enc = (o: object) => Buffer.from(JSON.stringify(o)).toString("base64url");
  const head = `${enc({ alg: "HS256", typ: "JWT" })}.${enc({ sub, iat: now, exp: now + 86_400 })}`;
  return `${head}.${createHmac("sha256", SECRET).update(head).digest("base64url")}`;
}

async function gzipPhase(data: BenchData, token: string, children: Child[]): Promise<void> {
  const quizId = data.levelQuiz.get(MAIN_LEVEL) as string;
  const bin = Buffer.from(
    toBinary(ListSessionsRequestSchema, create(ListSessionsRequestSchema, { quizId, limit: 100 })),
  );
  const variants: [string, number][] = [
    ["gzip off (compressMinBytes 64 KiB, as shipped)", 65_536],
    ["gzip on (compressMinBytes 1 KiB)", 1024],
  ];
  const servers: { name: string; child: Child; client: GrpcLoadClient }[] = [];
  for (const [name, min] of variants) {
    const child = await startChild(name, "bench/servers/connect-only.ts", {
      PORT: String(await freePort()),
      DATABASE_URL: data.url,
      JWT_SECRET: SECRET,
      COMPRESS_MIN_BYTES: String(min),
      DB_POOL_SIZE: String(POOL_SIZE),
    });
    children.push(child);
    servers.push({ name, child, client: new GrpcLoadClient(`127.0.0.1:${child.port}`) });
  }
  const md = bearer(token);
  const first = servers[0] as (typeof servers)[number];
  const bytes = await first.client.callRaw(LIST_PATH, bin, md);
  gzipReport.push({
    variant: "limit=100 page",
    bytes: bytes.length,
    gzipBytes: gzipSync(bytes).length,
  });
  const targets = servers.map((x) =>
    callTarget(
      `gRPC ${x.name}`,
      () => x.child.pid,
      () => x.client.call(LIST_PATH, bin, md),
      "OK",
    ),
  );
  for (const t of targets) await t.run(16, { durationMs: Math.min(2000, DURATION_MS) });
  for (let round = 1; round <= ROUNDS; round++) {
    for (const t of targets) {
      await measure(
        "gzip",
        `${MAIN_LEVEL} first page, limit 100`,
        t,
        16,
        { durationMs: DURATION_MS },
        round,
      );
    }
  }
  for (const x of servers) x.client.close();
}

// ---------------------------------------------------------------- report
function med(
  section: string,
  scenario: string,
  target: string,
  c: number | string,
  f: (r: Run) => number,
) {
  const xs = runs
    .filter(
      (r) =>
        r.section === section &&
        r.scenario === scenario &&
        r.target === target &&
        r.concurrency === c,
    )
    .map(f);
  return median(xs);
}

function fmt(x: number, digits = 0): string {
  return Number.isFinite(x) ? x.toFixed(digits) : "n/a";
}

function writeResults(data: BenchData): void {
  const lines: string[] = [];
  const out = (s = "") => lines.push(s);
  const host = `${process.version}, ${execFileSync("nproc").toString().trim()} cores`;
  out(`# Results ${new Date().toISOString()}`);
  out();
  out(
    `Node ${host}; ${data.totalSessions} sessions generated in ${data.generateSeconds.toFixed(1)} s; levels ${LEVELS.join(", ")}; ${DURATION_MS} ms per run; medians of ${ROUNDS} rounds where repeated.`,
  );
  out();
  const errored = runs.filter((r) => r.load.errors > 0);
  out(
    errored.length === 0
      ? "Every response had the expected status."
      : `**${errored.length} runs had errors** (see the tables).`,
  );

  const table = (
    section: string,
    scenario: string,
    cs: (number | string)[],
    baseline: string[],
  ) => {
    const targets = [
      ...new Set(
        runs.filter((r) => r.section === section && r.scenario === scenario).map((r) => r.target),
      ),
    ];
    out();
    const ratioHead = baseline.map((b) => ` × ${b} |`).join("");
    out(
      `| target | c | req/s | p50 ms | p99 ms |${ratioHead} server CPU µs/req | client CPU µs/req | DB CPU µs/req | Questions/req (global) | errors |`,
    );
    out(
      `|---|---:|---:|---:|---:|${baseline.map(() => "---:|").join("")}---:|---:|---:|---:|---:|`,
    );
    for (const c of cs) {
      for (const t of targets) {
        const rps = med(section, scenario, t, c, (r) => r.load.rps);
        if (!Number.isFinite(rps)) continue;
        const ratios = baseline.map((b) =>
          fmt(rps / med(section, scenario, b, c, (r) => r.load.rps), 2),
        );
        const errs = runs
          .filter(
            (r) =>
              r.section === section &&
              r.scenario === scenario &&
              r.target === t &&
              r.concurrency === c,
          )
          .reduce((n, r) => n + r.load.errors, 0);
        out(
          `| ${t} | ${c} | ${fmt(rps)} | ${fmt(
            med(section, scenario, t, c, (r) => r.load.p50),
            2,
          )} | ${fmt(
            med(section, scenario, t, c, (r) => r.load.p99),
            2,
          )} |${ratios.map((x) => ` ${x} |`).join("")} ${fmt(med(section, scenario, t, c, (r) => r.cpuUsPerReq))} | ${fmt(med(section, scenario, t, c, (r) => r.clientCpuUsPerReq))} | ${fmt(med(section, scenario, t, c, (r) => r.dbCpuUsPerReq))} | ${fmt(
            med(section, scenario, t, c, (r) => r.questionsPerReq),
            2,
          )} | ${errs} |`,
        );
      }
    }
  };

  out();
  out(`## List, ${MAIN_LEVEL} sessions, first page (limit 20)`);
  table("list", `${MAIN_LEVEL} first page`, CONCURRENCIES, [
    "raw mysql2",
    "bare Fastify",
    "bare Fastify + token cache",
  ]);
  out();
  out("## List p50 by history size (c=1)");
  out();
  out(
    `| target | page | ${LEVELS.map((l) => `p50 @ ${l}`).join(" | ")} | p50 @ ${BIG} / p50 @ 10 |`,
  );
  out(`|---|---|${LEVELS.map(() => "---:").join("|")}|---:|`);
  for (const t of ["raw mysql2", "REST", "gRPC"]) {
    for (const page of ["first page", "deep cursor"]) {
      const p = LEVELS.map((l) => med("history", `${l} ${page}`, t, 1, (r) => r.load.p50));
      out(
        `| ${t} | ${page} | ${p.map((x) => fmt(x, 3)).join(" | ")} | ${fmt((p.at(-1) as number) / (p[0] as number), 2)} |`,
      );
    }
  }
  out();
  out("## GetQuiz, a quiz of 10 questions");
  table("quiz", "10 questions", [1, 16], ["raw mysql2"]);
  out();
  out("## Start or resume (c=16)");
  out();
  out("### Resume (an in-progress session with 5 answers)");
  table("start", "resume", [16], ["raw mysql2", "bare Fastify"]);
  out();
  out(`### Create (a new user per request, ${CREATES} requests per run)`);
  table("start", "create", [16], ["raw mysql2", "bare Fastify"]);
  out();
  out("## Round trips and rows read per request (exact, through a counting proxy, c=1)");
  out();
  out(
    "| scenario | target | round trips/req | rows read/req (Handler_read_*) | counters clean | errors |",
  );
  out("|---|---|---:|---:|---|---:|");
  for (const a of accounting) {
    out(
      `| ${a.scenario} | ${a.target} | ${fmt(a.roundTripsPerReq, 2)} | ${fmt(a.rowsReadPerReq, 1)} | ${a.clean ? "yes" : "no (other clients)"} | ${a.errors} |`,
    );
  }
  out();
  out("## Open loop at 70% of the median closed-loop rate at c=16");
  out();
  out("| target | rate | achieved req/s | p50 ms | p99 ms | p99/p50 | errors |");
  out("|---|---:|---:|---:|---:|---:|---:|");
  for (const r of runs.filter((x) => x.section === "open")) {
    out(
      `| ${r.target} | ${r.concurrency} | ${fmt(r.load.rps)} | ${fmt(r.load.p50, 2)} | ${fmt(r.load.p99, 2)} | ${fmt(r.load.p99 / r.load.p50, 2)} | ${r.load.errors} |`,
    );
  }
  out();
  out("## gRPC list pages with and without gzip (limit 100)");
  for (const g of gzipReport) out(`\nResponse message: ${g.bytes} bytes, ${g.gzipBytes} gzipped.`);
  table("gzip", `${MAIN_LEVEL} first page, limit 100`, [16], []);
  if (soakReport) {
    out();
    out("## Memory (service RSS, MiB)");
    out();
    out(
      `At start ${fmt(soakReport.rssStart, 1)}; after warm-up and the list matrix ${fmt(soakReport.rssAfterWarm, 1)}; after ${soakReport.requests} more REST list requests ${fmt(soakReport.rssAfterSoak, 1)} (${fmt((soakReport.rssAfterSoak / soakReport.rssAfterWarm - 1) * 100, 1)}%).`,
    );
  }
  for (const n of notes) out(`\n${n}`);
  const md = lines.join("\n");
  mkdirSync("bench/results", { recursive: true });
  const stamp = new Date().toISOString().replace(/[:.]/g, "-");
  writeFileSync(
    `bench/results/${stamp}.json`,
    JSON.stringify({ levels: LEVELS, runs, accounting, soakReport, gzipReport }, null, 1),
  );
  writeFileSync(`bench/results/${stamp}.md`, `${md}\n`);
  console.log(md);
  log(`wrote bench/results/${stamp}.md and .json`);
}

await main();
