import { Writable } from "node:stream";
import { Code, ConnectError } from "@connectrpc/connect";
import { sql } from "kysely";
import { pino } from "pino";
import { Registry } from "prom-client";
import { v7 as uuidv7 } from "uuid";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase } from "../../src/db/connect.js";
import { outboxEvent } from "../../src/db/outbox-event.js";
import { insertEvents } from "../../src/db/outbox-repository.js";
import { sessionStarted } from "../../src/domain/events.js";
import { OutboxMetrics } from "../../src/events/relay-metrics.js";
import { createTestDatabase, testStore } from "../support/database.js";
import { insertQuiz, type QuizFixture } from "../support/fixtures.js";
import { startTestService, type TestService } from "../support/service.js";
import { defaultDatabaseLimits } from "../support/settings.js";

let svc: TestService;
let quiz: QuizFixture;
/** Every line the service logged, raw. */
const lines: string[] = [];
const USER = "observed-user";

beforeAll(async () => {
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(...String(chunk).split("\n").filter(Boolean));
      done();
    },
  });
  svc = await startTestService({ logger: pino({ level: "info" }, sink) });
  quiz = await insertQuiz(svc.db);
});
afterAll(async () => {
  await svc?.close();
});

interface RequestLine {
  reqId: string;
  user?: string;
  transport: string;
  procedure: string;
  code: string;
  status: number;
  ms: number;
}

const requestLines = (): RequestLine[] =>
  lines.map((l) => JSON.parse(l)).filter((l) => l.msg === "request");

/** The request log is written when the response has gone: wait for `n` lines. */
async function waitForLines(n: number): Promise<RequestLine[]> {
  const deadline = Date.now() + 2000;
  while (requestLines().length < n && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 20));
  }
  return requestLines();
}

async function metrics(): Promise<string> {
  const res = await fetch(`${svc.metricsUrl}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
  return res.text();
}

/** The value of one sample line, e.g. `practice_requests_total{...}`. */
function sample(text: string, series: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe("request log and metrics", () => {
  it("logs one JSON line per request on every transport, with id, user, procedure, code and duration, never the token", async () => {
    const token = await svc.token(USER);
    const auth = { authorization: `Bearer ${token}` };
    const list = `/quizzes/${quiz.quizId}/sessions`;

    const given = await fetch(`${svc.baseUrl}${list}`, {
      method: "POST",
      headers: { ...auth, "x-request-id": "req-abc.123" },
    });
    expect(given.status).toBe(201);
    expect(given.headers.get("x-request-id")).toBe("req-abc.123");
    const generated = await fetch(`${svc.baseUrl}/api${list}`, {
      headers: { ...auth, "x-request-id": "not an id\tat all" },
    });
    expect(generated.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    expect((await fetch(`${svc.baseUrl}${list}`)).status).toBe(401);
    await svc.connect.listSessions({ quizId: quiz.quizId }, { headers: auth });
    await svc.grpcWeb.listSessions({ quizId: quiz.quizId }, { headers: auth });
    await expect(svc.grpc.listSessions({ quizId: "999999" }, auth)).rejects.toMatchObject({
      code: 5,
    });
    const err = await svc.connect.listSessions({ quizId: quiz.quizId }).catch((e) => e);
    expect(ConnectError.from(err).code).toBe(Code.Unauthenticated);

    const logged = await waitForLines(7);
    expect(logged).toHaveLength(7);
    expect(
      logged.map(({ transport, procedure, code, status, user }) => ({
        transport,
        procedure,
        code,
        status,
        user,
      })),
    ).toEqual([
      {
        transport: "rest",
        procedure: "POST /quizzes/:quiz_id/sessions",
        code: "ok",
        status: 201,
        user: USER,
      },
      {
        transport: "rest",
        procedure: "GET /api/quizzes/:quiz_id/sessions",
        code: "ok",
        status: 200,
        user: USER,
      },
      {
        transport: "rest",
        procedure: "GET /quizzes/:quiz_id/sessions",
        code: "unauthenticated",
        status: 401,
        user: undefined,
      },
      {
        transport: "connect",
        procedure: "/practice.v1.PracticeSessionService/ListSessions",
        code: "ok",
        status: 200,
        user: USER,
      },
      {
        transport: "grpc-web",
        procedure: "/practice.v1.PracticeSessionService/ListSessions",
        code: "ok",
        status: 200,
        user: USER,
      },
      {
        transport: "grpc",
        procedure: "/practice.v1.PracticeSessionService/ListSessions",
        code: "not_found",
        status: 200,
        user: USER,
      },
      {
        transport: "connect",
        procedure: "/practice.v1.PracticeSessionService/ListSessions",
        code: "unauthenticated",
        status: 401,
        user: undefined,
      },
    ]);
    expect(logged[0]?.reqId).toBe("req-abc.123");
    expect(logged[1]?.reqId).toBe(generated.headers.get("x-request-id"));
    for (const line of logged) expect(line.ms).toBeGreaterThan(0);
    const all = lines.join("\n");
    expect(all).not.toContain(token);
    expect(all).not.toContain(token.split(".")[2]);
    expect(all.toLowerCase()).not.toContain("bearer");
  });

  it("exports request counts and latency by transport, procedure and code, pool and process metrics", async () => {
    const text = await metrics();
    const rpc = "/practice.v1.PracticeSessionService/ListSessions";
    const count = (transport: string, procedure: string, code: string) =>
      sample(
        text,
        `practice_requests_total{transport="${transport}",procedure="${procedure}",code="${code}"}`,
      );
    expect(count("rest", "POST /quizzes/:quiz_id/sessions", "ok")).toBe(1);
    expect(count("rest", "GET /quizzes/:quiz_id/sessions", "unauthenticated")).toBe(1);
    expect(count("connect", rpc, "ok")).toBe(1);
    expect(count("connect", rpc, "unauthenticated")).toBe(1);
    expect(count("grpc-web", rpc, "ok")).toBe(1);
    expect(count("grpc", rpc, "not_found")).toBe(1);
    expect(
      sample(
        text,
        `practice_request_duration_seconds_count{transport="grpc",procedure="${rpc}",code="not_found"}`,
      ),
    ).toBe(1);
    expect(
      sample(
        text,
        `practice_request_duration_seconds_bucket{le="+Inf",transport="connect",procedure="${rpc}",code="ok"}`,
      ),
    ).toBe(1);
    if (testStore() === "mysql") {
      // The pool served every query above and now rests.
      expect(sample(text, 'practice_db_pool_connections{state="idle"}')).toBeGreaterThan(0);
      expect(sample(text, 'practice_db_pool_connections{state="in_use"}')).toBe(0);
      expect(sample(text, "practice_db_pool_waiting")).toBe(0);
    } else {
      // SQLite has no pool.
      expect(text).not.toContain("practice_db_pool_connections");
    }
    expect(text).toMatch(/^process_cpu_user_seconds_total \d/m);
    expect(text).toMatch(/^nodejs_eventloop_lag_seconds \d/m);
  });

  it("counts a scrape but keeps probes and scrapes out of the info log", async () => {
    const before = requestLines().length;
    await fetch(`${svc.baseUrl}/healthz`);
    const text = await metrics();
    expect(
      sample(text, 'practice_requests_total{transport="rest",procedure="GET /healthz",code="ok"}'),
    ).toBe(1);
    await new Promise((r) => setTimeout(r, 100));
    expect(requestLines()).toHaveLength(before);
  });
});

describe("admission in the metrics", () => {
  it("exports the calls running and waiting, the limit and the calls shed", async () => {
    const text = await metrics();
    // The scrape itself runs on the metrics port: no API call is in flight.
    expect(sample(text, "practice_admission_in_flight")).toBe(0);
    expect(sample(text, "practice_admission_queued")).toBe(0);
    expect(sample(text, "practice_admission_limit")).toBeGreaterThan(0);
    expect(sample(text, "practice_admission_shed_total")).toBe(0);
  });
});

describe("GetQuiz in the metrics", () => {
  it("counts REST and gRPC GetQuiz calls under their own procedure and code", async () => {
    const content = await insertQuiz(svc.db);
    const headers = await svc.auth("quiz-counter");
    expect((await svc.rest("quiz-counter", "GET", `/quizzes/${content.quizId}`)).status).toBe(200);
    expect((await svc.rest("quiz-counter", "GET", "/quizzes/999999")).status).toBe(404);
    await svc.quizGrpc.getQuiz({ quizId: content.quizId }, headers);
    const text = await metrics();
    const count = (labels: string) =>
      new RegExp(`^practice_requests_total\\{${labels}\\} [1-9]`, "m").test(text);
    expect(count('transport="rest",procedure="GET /quizzes/:quiz_id",code="ok"')).toBe(true);
    expect(count('transport="rest",procedure="GET /quizzes/:quiz_id",code="not_found"')).toBe(true);
    expect(count('transport="grpc",procedure="/practice.v1.QuizService/GetQuiz",code="ok"')).toBe(
      true,
    );
  });
});

// Last: its requests would count in the log tests above.
describe("the metrics listener", () => {
  it("serves /metrics only on its own listener (with the probes, nothing else): the public port answers 404 problem+json", async () => {
    for (const path of ["/metrics", "/api/metrics"]) {
      const res = await fetch(`${svc.baseUrl}${path}`);
      expect(res.status).toBe(404);
      expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    }
    expect((await fetch(`${svc.metricsUrl}/metrics`)).status).toBe(200);
    expect((await fetch(`${svc.metricsUrl}/readyz`)).status).toBe(200);
    expect((await fetch(`${svc.metricsUrl}/quizzes`)).status).toBe(404);
  });
});

describe.skipIf(testStore() === "sqlite")("metrics while the users' pool is exhausted", () => {
  it("reads the outbox backlog on a connection of its own: the scrape reports it all the same", async () => {
    const database = await createTestDatabase("mysql");
    const handle = openDatabase({
      url: database.url,
      poolSize: 2,
      connectTimeoutMs: 3000,
      limits: defaultDatabaseLimits(),
    });
    try {
      const id = uuidv7();
      const started = (n: number) =>
        outboxEvent(
          sessionStarted("u", {
            id,
            quizId: "1",
            mode: "full",
            startedAt: new Date(),
            totalQuestions: n,
          }),
        );
      await handle.db.transaction().execute((trx) => insertEvents(trx, [started(1), started(2)]));
      // Every connection of the users' pool busy for 2 s.
      const sleepers = [1, 2].map(() => sql`SELECT SLEEP(2)`.execute(handle.db));
      await new Promise((r) => setTimeout(r, 300));
      const registry = new Registry();
      new OutboxMetrics(registry, handle.opsDb);
      const text = await registry.metrics();
      await Promise.all(sleepers);
      expect(text).toMatch(/^practice_outbox_backlog 2$/m);
    } finally {
      await handle.close();
      await database.drop();
    }
  });
});
