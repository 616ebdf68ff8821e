import { type ChildProcess, execFile, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PracticeSessionService } from "../../gen/practice/v1/practice_session_service_pb.js";
import { signToken } from "../../src/auth/tokens.js";
import { createTestDatabase, type TestDatabase, testStore } from "../support/database.js";
import { REPO } from "../support/entry.js";
import { insertQuiz, type QuizFixture } from "../support/fixtures.js";
import { createGrpcClient } from "../support/grpc-client.js";
import { listeningPort, serviceEnv } from "../support/listening.js";
import { deleteStream, requireNats, testNatsUrl, uniqueTarget } from "../support/nats.js";
import { OtlpReceiver, type ReceivedSpan, SpanKinds } from "../support/otlp-receiver.js";
import { TEST_SECRET } from "../support/service.js";

/**
 * One trace from the caller to the consumer, on the compiled service as
 * `npm start` runs it (dist/, the tracing preload, Node's module hooks),
 * exporting OTLP/HTTP (protobuf; the consumer JSON) to a receiver of the
 * test's own: the caller's span is the server span's parent on gRPC, REST and
 * Connect, the SQL statements (MariaDB, mysql2) nest under it, the relay
 * publishes in the same trace with `traceparent` in the NATS headers and the
 * CloudEvent, and the example consumer goes on under the relay's span. An
 * unsampled caller exports nothing; a malformed traceparent starts a new trace
 * and fails no call.
 */

const run = promisify(execFile);
const natsUp = testStore() === "mysql" && (await requireNats());
const OUT = join(REPO, "dist-test-tracing");

const receiver = new OtlpReceiver();
const target = uniqueTarget();
const stateDir = mkdtempSync(join(tmpdir(), "trace-consumer-"));
let database: TestDatabase;
let quiz: QuizFixture;
let service: ChildProcess;
let output: () => string;
let port = 0;
let endpoint = "";
const token = (user: string) => signToken(TEST_SECRET, user);

const hex = (bytes: number) => randomBytes(bytes).toString("hex");
/** A caller's span: trace id, span id, and the `traceparent` naming it. */
function callerSpan(flags = "01") {
  const traceId = hex(16);
  const spanId = hex(8);
  return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-${flags}` };
}

/** Whether `span` is `ancestor` or sits under it in `spans`. */
function under(spans: ReceivedSpan[], span: ReceivedSpan, ancestor: ReceivedSpan): boolean {
  let at: ReceivedSpan | undefined = span;
  for (let hops = 0; at !== undefined && hops < 20; hops++) {
    if (at.spanId === ancestor.spanId) return true;
    const parent: string | undefined = at.parentSpanId;
    at = spans.find((s) => s.spanId === parent);
  }
  return false;
}

/** The server span of a call in `traceId`, once exported. */
function serverSpan(traceId: string): Promise<ReceivedSpan> {
  return receiver.waitFor((spans) =>
    spans.find((s) => s.traceId === traceId && s.kind === SpanKinds.SERVER),
  );
}

/** The SQL spans of the trace under `server`. */
function sqlUnder(server: ReceivedSpan): ReceivedSpan[] {
  const spans = receiver.trace(server.traceId);
  return spans.filter(
    (s) =>
      s.kind === SpanKinds.CLIENT &&
      s.attributes["db.system.name"] !== undefined &&
      under(spans, s, server),
  );
}

async function rest(method: string, path: string, headers: Record<string, string>, body?: unknown) {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${await token("tracer")}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
      ...headers,
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe.skipIf(testStore() === "mysql")("tracing started by instrument.ts", () => {
  const started = async (env: Record<string, string>) => {
    const tsx = pathToFileURL(join(REPO, "node_modules/tsx/dist/loader.mjs")).href;
    const probe = `import { tracingStarted } from "./src/ops/tracing.ts"; console.log(tracingStarted());`;
    const { stdout } = await run(
      process.execPath,
      ["--import", tsx, "--import", "./src/instrument.ts", "--input-type=module", "-e", probe],
      { cwd: REPO, env: { ...process.env, ...env } },
    );
    return stdout.trim();
  };

  it("starts nothing without an OTEL_* variable that gives spans somewhere to go", async () => {
    expect(await started({ OTEL_SERVICE_NAME: "x" })).toBe("false");
    expect(
      await started({
        OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:9",
        OTEL_TRACES_EXPORTER: "none",
      }),
    ).toBe("false");
    expect(await started({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:9" })).toBe("true");
  });
});

describe.skipIf(!natsUp)(
  "one trace from the caller to the consumer (compiled service, MariaDB, NATS)",
  () => {
    beforeAll(async () => {
      // An out-of-the-way build: dist/ may be in use by a running `npm start`.
      rmSync(OUT, { recursive: true, force: true });
      await run(
        process.execPath,
        [
          join(REPO, "node_modules/typescript/bin/tsc"),
          "-p",
          "tsconfig.build.json",
          "--outDir",
          OUT,
          "--tsBuildInfoFile",
          join(OUT, ".tsbuildinfo"),
        ],
        { cwd: REPO },
      );
      endpoint = await receiver.start();
      database = await createTestDatabase("mysql");
      quiz = await insertQuiz(database.db, { questions: 2 });
      service = spawn(process.execPath, ["--enable-source-maps", join(OUT, "src/main.js")], {
        cwd: REPO,
        env: serviceEnv({
          DATABASE_URL: database.url,
          NATS_URL: testNatsUrl(),
          NATS_STREAM: target.stream,
          NATS_SUBJECT_PREFIX: target.subjectPrefix,
          PRACTICE_PAGE: "off",
          // The default protocol, http/protobuf; the consumer below sends http/json.
          OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
          OTEL_SERVICE_NAME: "practice-sessions",
          OTEL_BSP_SCHEDULE_DELAY: "100",
        }),
        stdio: ["ignore", "pipe", "inherit"],
      });
      const listening = listeningPort(service);
      output = listening.output;
      port = await listening.port;
    }, 240_000);

    afterAll(async () => {
      service?.kill("SIGTERM");
      await receiver.close();
      await database?.drop();
      await deleteStream(target);
      rmSync(OUT, { recursive: true, force: true });
      rmSync(stateDir, { recursive: true, force: true });
    });

    it("gRPC StartSession: server span under the caller's, SQL under it, the relay's publish in the trace with traceparent in the NATS headers and the CloudEvent", async () => {
      const caller = callerSpan();
      const client = createGrpcClient(PracticeSessionService, `127.0.0.1:${port}`);
      const res = await client
        .startSession(
          { quizId: quiz.quizId },
          { authorization: `Bearer ${await token("tracer")}`, traceparent: caller.traceparent },
        )
        .finally(() => client.close());
      const sessionId = res.session?.id ?? "";

      const server = await serverSpan(caller.traceId);
      expect(server.parentSpanId).toBe(caller.spanId);
      expect(server.name).toBe("practice.v1.PracticeSessionService/StartSession");
      expect(server.attributes).toMatchObject({
        "rpc.system": "grpc",
        "rpc.service": "practice.v1.PracticeSessionService",
        "rpc.method": "StartSession",
        "rpc.grpc.status_code": 0,
      });
      const sql = sqlUnder(server);
      expect(sql.length).toBeGreaterThan(0);
      expect(sql.map((s) => s.attributes["db.operation.name"])).toContain("INSERT");
      // Statements with placeholders, never the values bound to them.
      for (const s of sql) {
        expect(String(s.attributes["db.query.text"])).toMatch(/^[a-z]+\b/i);
        expect(String(s.attributes["db.query.text"])).not.toContain("tracer");
      }
      const useCase = receiver.trace(caller.traceId).find((s) => s.name === "startSession");
      expect(useCase?.parentSpanId).toBe(server.spanId);

      const producer = await receiver.waitFor((spans) =>
        spans.find((s) => s.traceId === caller.traceId && s.kind === SpanKinds.PRODUCER),
      );
      expect(under(receiver.trace(caller.traceId), producer, server)).toBe(true);
      expect(producer.name).toBe(`publish ${target.subjectPrefix}.session.started`);
      expect(producer.attributes["messaging.system"]).toBe("nats");

      const nc = await connect({ servers: testNatsUrl() });
      try {
        const jsm = await jetstreamManager(nc);
        const m = await jsm.streams.getMessage(target.stream, {
          last_by_subj: `${target.subjectPrefix}.session.started`,
        });
        const traceparent = `00-${caller.traceId}-${producer.spanId}-01`;
        expect(m?.header.get("traceparent")).toBe(traceparent);
        // The trace headers go beside JetStream's de-duplication id, not instead of it.
        const event0 = m?.json<{ id: string }>();
        expect(m?.header.get("Nats-Msg-Id")).toBe(event0?.id);
        const event = m?.json<{ subject: string; traceparent: string }>();
        expect(event).toMatchObject({ subject: sessionId, traceparent });
      } finally {
        await nc.close();
      }
      // Logs and traces join: the call's log line names its trace and span.
      expect(output()).toContain(`"trace_id":"${caller.traceId}","span_id":"${server.spanId}"`);
      // No value, token or answer in any attribute.
      const text = JSON.stringify(receiver.trace(caller.traceId));
      expect(text).not.toMatch(/Bearer|tracer"/);
    });

    it("REST CompleteSession: the same, and the example consumer's span goes on under the relay's", async () => {
      const started = await rest("POST", `/quizzes/${quiz.quizId}/sessions`, {});
      // An answer in a trace of its own: its text goes in no span.
      const answering = callerSpan();
      const answer = "zebra-secret-answer";
      const answered = await rest(
        "POST",
        `/sessions/${String(started.body.id)}/answers`,
        { traceparent: answering.traceparent },
        { question_id: quiz.questionIds[0], user_answer: answer },
      );
      expect(answered.status).toBe(201);
      const answerSpan = await serverSpan(answering.traceId);
      expect(sqlUnder(answerSpan).map((s) => s.attributes["db.operation.name"])).toContain(
        "INSERT",
      );
      expect(JSON.stringify(receiver.trace(answering.traceId))).not.toContain(answer);
      const caller = callerSpan();
      const done = await rest("POST", `/sessions/${String(started.body.id)}/complete`, {
        traceparent: caller.traceparent,
        tracestate: "vendor=opaque",
      });
      expect(done.status).toBe(200);
      const server = await serverSpan(caller.traceId);
      expect(server.parentSpanId).toBe(caller.spanId);
      expect(server.name).toBe("POST /sessions/:id/complete");
      expect(server.attributes).toMatchObject({
        "http.route": "/sessions/:id/complete",
        "http.response.status_code": 200,
      });
      expect(sqlUnder(server).length).toBeGreaterThan(0);
      const producer = await receiver.waitFor((spans) =>
        spans.find((s) => s.traceId === caller.traceId && s.kind === SpanKinds.PRODUCER),
      );
      expect(producer.name).toBe(`publish ${target.subjectPrefix}.session.completed`);

      const tsx = pathToFileURL(join(REPO, "node_modules/tsx/dist/loader.mjs")).href;
      const consumer = spawn(
        process.execPath,
        ["--import", tsx, join(REPO, "examples/consumer/main.ts")],
        {
          cwd: REPO,
          env: {
            ...process.env,
            NATS_URL: testNatsUrl(),
            NATS_STREAM: target.stream,
            NATS_SUBJECT_PREFIX: target.subjectPrefix,
            CONSUMER_NAME: `trace-${hex(4)}`,
            CONSUMER_STATE: join(stateDir, "state.json"),
            OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
            OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
            OTEL_SERVICE_NAME: "average-score",
            OTEL_BSP_SCHEDULE_DELAY: "100",
          },
          stdio: ["ignore", "ignore", "inherit"],
        },
      );
      try {
        const consumed = await receiver.waitFor(
          (spans) =>
            spans.find((s) => s.traceId === caller.traceId && s.kind === SpanKinds.CONSUMER),
          30_000,
        );
        expect(consumed.parentSpanId).toBe(producer.spanId);
        expect(consumed.service).toBe("average-score");
        expect(consumed.name).toBe(`process ${target.subjectPrefix}.session.completed`);
      } finally {
        consumer.kill("SIGTERM");
      }
    });

    it("Connect ListSessions: server span under the caller's, named by rpc.* with connect_rpc", async () => {
      const caller = callerSpan();
      const res = await fetch(
        `http://127.0.0.1:${port}/practice.v1.PracticeSessionService/ListSessions`,
        {
          method: "POST",
          headers: {
            authorization: `Bearer ${await token("tracer")}`,
            "content-type": "application/json",
            traceparent: caller.traceparent,
          },
          body: JSON.stringify({ quizId: quiz.quizId }),
        },
      );
      expect(res.status).toBe(200);
      const server = await serverSpan(caller.traceId);
      expect(server.parentSpanId).toBe(caller.spanId);
      expect(server.attributes).toMatchObject({
        "rpc.system": "connect_rpc",
        "rpc.method": "ListSessions",
        "http.response.status_code": 200,
      });
      expect(sqlUnder(server).length).toBeGreaterThan(0);
    });

    it("a failed call's server span carries its Connect code", async () => {
      const caller = callerSpan();
      const res = await fetch(
        `http://127.0.0.1:${port}/practice.v1.PracticeSessionService/GetSession`,
        {
          method: "POST",
          headers: {
            authorization: `Bearer ${await token("tracer")}`,
            "content-type": "application/json",
            traceparent: caller.traceparent,
          },
          body: JSON.stringify({ sessionId: "01900000-0000-7000-8000-000000000000" }),
        },
      );
      expect(res.status).toBe(404);
      const server = await serverSpan(caller.traceId);
      expect(server.attributes).toMatchObject({
        "rpc.connect_rpc.error_code": "not_found",
        "error.type": "not_found",
      });
    });

    it("a caller that did not sample: the call is served, nothing of its trace is exported", async () => {
      const unsampled = callerSpan("00");
      const started = await rest("POST", `/quizzes/${quiz.quizId}/sessions`, {
        traceparent: unsampled.traceparent,
      });
      expect([200, 201]).toContain(started.status);
      // A sampled call after it: once its spans are in, the unsampled call's would be too.
      const marker = callerSpan();
      await rest("GET", `/quizzes/${quiz.quizId}/sessions`, { traceparent: marker.traceparent });
      await serverSpan(marker.traceId);
      expect(receiver.trace(unsampled.traceId)).toEqual([]);
      // Nor is SQL outside a call a trace of its own: the relay polls ten times a second.
      const rootSql = receiver.spans.filter((s) => s.kind === SpanKinds.CLIENT && !s.parentSpanId);
      expect(rootSql).toEqual([]);
    });

    it.each([
      ["wrong length", (t: string) => `00-${t.slice(0, 30)}-b7ad6b7169203331-01`],
      ["version ff", (t: string) => `ff-${t}-b7ad6b7169203331-01`],
      ["all-zero trace id", () => `00-${"0".repeat(32)}-b7ad6b7169203331-01`],
      ["all-zero span id", (t: string) => `00-${t}-${"0".repeat(16)}-01`],
    ])("a malformed traceparent (%s) starts a new trace and fails nothing", async (_, make) => {
      const bad = hex(16);
      const requestId = `bad-${hex(4)}`;
      const res = await rest("GET", `/quizzes/${quiz.quizId}/sessions`, {
        traceparent: make(bad),
        "x-request-id": requestId,
      });
      expect(res.status).toBe(200);
      const line = await receiver.waitFor(() =>
        output()
          .split("\n")
          .find((l) => l.includes(`"reqId":"${requestId}"`)),
      );
      const traceId = (JSON.parse(line) as { trace_id: string }).trace_id;
      expect(traceId).toMatch(/^[0-9a-f]{32}$/);
      expect(traceId).not.toBe(bad);
      const server = await serverSpan(traceId);
      expect(server.parentSpanId).toBeUndefined();
    });
  },
);
