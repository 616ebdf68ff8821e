import { context, propagation, SpanKind, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import {
  CompositePropagator,
  W3CBaggagePropagator,
  W3CTraceContextPropagator,
} from "@opentelemetry/core";
import {
  AlwaysOnSampler,
  InMemorySpanExporter,
  ParentBasedSampler,
  type ReadableSpan,
  SimpleSpanProcessor,
  TracerProvider,
} from "@opentelemetry/sdk-trace";
import { pino } from "pino";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { enableUseCaseSpans } from "../../src/app/use-case-span.js";
import type { App } from "../../src/app-server.js";
import { createAuthenticator } from "../../src/auth/authenticator.js";
import { signToken } from "../../src/auth/tokens.js";
import { admissionConfig } from "../../src/config.js";
import { outboxEvent } from "../../src/db/outbox-event.js";
import { insertEvents } from "../../src/db/outbox-repository.js";
import { FakeClock } from "../../src/domain/clock.js";
import { sessionStarted } from "../../src/domain/events.js";
import { startPublish } from "../../src/events/trace-event.js";
import { Admission } from "../../src/ops/admission.js";
import { ServiceSampler } from "../../src/ops/trace-sampler.js";
import { buildApp } from "../../src/server.js";
import { createTestDatabase, type TestDatabase, testStore } from "../support/database.js";
import { insertQuiz, type QuizFixture } from "../support/fixtures.js";
import { deleteStream, requireNats, testRelay, uniqueTarget } from "../support/nats.js";
import { TEST_SECRET } from "../support/service.js";
import { defaultAppSettings } from "../support/settings.js";

/**
 * Tracing in process, spans in memory: the SERVER span per request and its
 * attributes, the use case under it, the outbox row's stored context, the
 * relay's publish, and the admission wait. (The compiled service with its
 * OTLP exporter, SQL spans and NATS: test/integration/tracing.test.ts.)
 */

const natsUp = await requireNats();
const exporter = new InMemorySpanExporter();
const provider = new TracerProvider({
  sampler: new ServiceSampler(new ParentBasedSampler({ root: new AlwaysOnSampler() })),
  spanProcessors: [new SimpleSpanProcessor({ exporter })],
});
let database: TestDatabase;
let quiz: QuizFixture;
let app: App;
const admission = new Admission(admissionConfig({}, 1));
const clock = new FakeClock(new Date());

beforeAll(async () => {
  // Globals: set for this file only, and taken down after it (workers share modules).
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  enableUseCaseSpans();
  database = await createTestDatabase();
  quiz = await insertQuiz(database.db, { questions: 2 });
  app = await buildApp({
    ...defaultAppSettings(),
    db: database.db,
    clock,
    admission,
    authenticator: createAuthenticator({ secret: TEST_SECRET }, clock),
    logger: pino({ level: "silent" }),
    tracing: true,
  });
});
afterAll(async () => {
  await app?.close();
  await database?.drop();
  enableUseCaseSpans(false);
  trace.disable();
  propagation.disable();
  context.disable();
});
beforeEach(() => exporter.reset());

const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER = "00f067aa0ba902b7";
const traceparent = `00-${TRACE_ID}-${CALLER}-01`;

async function call(
  method: "GET" | "POST",
  url: string,
  headers: Record<string, string>,
  body?: string,
) {
  const token = await signToken(TEST_SECRET, "tracer", { now: clock.now() });
  return app.inject({
    method,
    url,
    headers: { authorization: `Bearer ${token}`, ...headers },
    payload: body,
  });
}

const spans = (): ReadableSpan[] => exporter.getFinishedSpans();
const named = (name: string) => spans().find((s) => s.name === name);

describe("tracing in process", () => {
  it("REST: one SERVER span under the caller's, the use case under it, and the event row keeps the trace", async () => {
    const res = await call("POST", `/quizzes/${quiz.quizId}/sessions`, { traceparent });
    expect(res.statusCode).toBe(201);
    const server = named("POST /quizzes/:quiz_id/sessions");
    expect(server?.kind).toBe(SpanKind.SERVER);
    expect(server?.spanContext().traceId).toBe(TRACE_ID);
    expect(server?.parentSpanContext?.spanId).toBe(CALLER);
    expect(server?.attributes).toMatchObject({
      "http.request.method": "POST",
      "http.route": "/quizzes/:quiz_id/sessions",
      "http.response.status_code": 201,
    });
    const useCase = named("startSession");
    expect(useCase?.parentSpanContext?.spanId).toBe(server?.spanContext().spanId);

    const row = await database.db
      .selectFrom("practice_outbox")
      .select(["trace_context", "session_id"])
      .where("session_id", "=", String(res.json().id))
      .executeTakeFirstOrThrow();
    const stored = JSON.parse(row.trace_context ?? "{}") as { traceparent: string };
    expect(stored.traceparent).toBe(`00-${TRACE_ID}-${useCase?.spanContext().spanId}-01`);
  });

  it("only traceparent and tracestate (within W3C's 32 members and 512 characters) go into the event row, never the caller's baggage", async () => {
    // The SDK's default propagators, baggage among them (a global is set once: disable first).
    propagation.disable();
    propagation.setGlobalPropagator(
      new CompositePropagator({
        propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()],
      }),
    );
    try {
      const fresh = await insertQuiz(database.db, { questions: 1 });
      const tracestate = Array.from({ length: 40 }, (_, i) => `v${i}=${"x".repeat(20)}`).join(",");
      const res = await call("POST", `/quizzes/${fresh.quizId}/sessions`, {
        traceparent,
        tracestate,
        // 7 KB in two entries: within what the baggage propagator passes on (4 KB an entry, 8 KB in all).
        // 7 KB in two entries: within what the baggage propagator passes on (4 KB an entry, 8 KB in all).
        baggage: `a=${"b".repeat(3500)},c=${"d".repeat(3500)}`,
      });
      expect(res.statusCode).toBe(201);
      const row = await database.db
        .selectFrom("practice_outbox")
        .select("trace_context")
        .where("session_id", "=", String(res.json().id))
        .executeTakeFirstOrThrow();
      const stored = JSON.parse(row.trace_context ?? "{}") as Record<string, string>;
      expect(Object.keys(stored).sort()).toEqual(["traceparent", "tracestate"]);
      expect(stored.tracestate?.length).toBeLessThanOrEqual(512);
      expect(stored.tracestate?.split(",").length).toBeLessThanOrEqual(32);
      expect(stored.tracestate?.startsWith("v0=")).toBe(true);
    } finally {
      propagation.disable();
      propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    }
  });

  it("the relay passes on no baggage a stored row holds", () => {
    propagation.disable();
    propagation.setGlobalPropagator(
      new CompositePropagator({
        propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()],
      }),
    );
    const row = {
      seq: 1,
      eventId: "e2",
      type: "practice.session.started",
      sessionId: "s2",
      createdAt: new Date(),
      body: JSON.stringify({ specversion: "1.0", id: "e2" }),
      traceContext: JSON.stringify({ traceparent, baggage: "user=secret" }),
    };
    const publish = startPublish(row, "practice.session.started");
    publish.span.end();
    propagation.disable();
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    expect(publish.headers?.get("baggage")).toBe("");
    expect(publish.headers?.get("traceparent")).toContain(TRACE_ID);
    expect(JSON.parse(publish.body)).not.toHaveProperty("baggage");
  });

  it.skipIf(testStore() !== "sqlite")(
    "SQLite: each statement a CLIENT span under the use case, its verb and text, no bound values",
    async () => {
      const fresh = await insertQuiz(database.db, { questions: 2 });
      const res = await call("POST", `/quizzes/${fresh.quizId}/sessions`, { traceparent });
      expect(res.statusCode).toBe(201);
      const useCase = named("startSession");
      const sql = spans().filter(
        (s) => s.kind === SpanKind.CLIENT && s.attributes["db.system.name"] === "sqlite",
      );
      expect(sql.length).toBeGreaterThan(1);
      for (const s of sql) {
        expect(s.parentSpanContext?.spanId).toBe(useCase?.spanContext().spanId);
        expect(s.attributes["db.operation.name"]).toBe(s.name);
        expect(String(s.attributes["db.query.text"])).not.toContain("tracer");
      }
      expect(sql.map((s) => s.name)).toContain("INSERT");
      // Outside a call, nothing: the untraced statement of this test's own.
      exporter.reset();
      await database.db.selectFrom("quizzes").select("id").where("id", "=", quiz.quizId).execute();
      expect(spans()).toEqual([]);
    },
  );

  it("Connect: the span is named after the procedure, with rpc.* and the failure's Connect code", async () => {
    const res = await call(
      "POST",
      "/practice.v1.PracticeSessionService/GetSession",
      { traceparent, "content-type": "application/json" },
      JSON.stringify({ sessionId: "01900000-0000-7000-8000-000000000000" }),
    );
    expect(res.statusCode).toBe(404);
    const server = named("practice.v1.PracticeSessionService/GetSession");
    expect(server?.parentSpanContext?.spanId).toBe(CALLER);
    expect(server?.attributes).toMatchObject({
      "rpc.system": "connect_rpc",
      "rpc.service": "practice.v1.PracticeSessionService",
      "rpc.method": "GetSession",
      "rpc.connect_rpc.error_code": "not_found",
      "error.type": "not_found",
    });
    // A caller's mistake is not the server's failure.
    expect(server?.status.code).not.toBe(2);
    expect(named("getSession")?.attributes["error.type"]).toBe("not_found");
  });

  it("no traceparent: a new trace; a malformed one: a new trace too, and the call is served", async () => {
    const headers: Record<string, string>[] = [
      {},
      { traceparent: "00-zz-00-01" },
      { traceparent: `ff-${TRACE_ID}-${CALLER}-01` },
    ];
    for (const header of headers) {
      exporter.reset();
      const res = await call("GET", `/quizzes/${quiz.quizId}/sessions`, header);
      expect(res.statusCode).toBe(200);
      const server = named("GET /quizzes/:quiz_id/sessions");
      expect(server?.parentSpanContext).toBeUndefined();
      expect(server?.spanContext().traceId).not.toBe(TRACE_ID);
    }
  });

  it("a call that waited for admission says how long on its span", async () => {
    const held = await admission.acquire(new AbortController().signal, "test");
    const pending = call("GET", `/quizzes/${quiz.quizId}/sessions`, { traceparent });
    while (admission.queued === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    held(true);
    expect((await pending).statusCode).toBe(200);
    const event = named("GET /quizzes/:quiz_id/sessions")?.events.find(
      (e) => e.name === "admission",
    );
    expect(event?.attributes?.["admission.queue_ms"]).toBeTypeOf("number");
  });

  it("the relay's publish: a PRODUCER span under the stored context, the same context in the headers and the CloudEvent", () => {
    const stored = JSON.stringify({ traceparent, tracestate: "vendor=opaque" });
    const body = JSON.stringify({ specversion: "1.0", id: "e1", type: "practice.session.started" });
    const row = {
      seq: 1,
      eventId: "e1",
      type: "practice.session.started",
      sessionId: "s1",
      createdAt: new Date(),
      body,
      traceContext: stored,
    };
    const publish = startPublish(row, "practice.session.started");
    publish.span.end();
    const producer = named("publish practice.session.started");
    expect(producer?.kind).toBe(SpanKind.PRODUCER);
    expect(producer?.parentSpanContext?.spanId).toBe(CALLER);
    const expected = `00-${TRACE_ID}-${producer?.spanContext().spanId}-01`;
    expect(publish.headers?.get("traceparent")).toBe(expected);
    expect(publish.headers?.get("tracestate")).toBe("vendor=opaque");
    expect(JSON.parse(publish.body)).toMatchObject({
      id: "e1",
      traceparent: expected,
      tracestate: "vendor=opaque",
    });

    // An event written untraced: a trace of its own starts at the publish.
    const untraced = startPublish({ ...row, traceContext: null }, "practice.session.started");
    untraced.span.end();
    expect(untraced.headers?.get("traceparent")).toContain(untraced.span.spanContext().traceId);
  });

  it("SQL outside any call is not a trace of its own", () => {
    const tracer = trace.getTracer("test");
    const attributes = { "db.system.name": "mysql" };
    const alone = tracer.startSpan("select", { kind: SpanKind.CLIENT, attributes });
    expect(alone.isRecording()).toBe(false);
    alone.end();
    const parent = tracer.startSpan("call");
    const inCall = tracer.startSpan(
      "select",
      { kind: SpanKind.CLIENT, attributes },
      trace.setSpan(context.active(), parent),
    );
    inCall.end();
    parent.end();
    expect(named("select")?.attributes["db.operation.name"]).toBe("SELECT");
  });

  it.skipIf(!natsUp)(
    "a rolled-back change publishes nothing; a committed one is published in its writer's trace",
    async () => {
      await database.db.deleteFrom("practice_outbox").execute();
      const tracer = trace.getTracer("test");
      const event = (id: string) =>
        outboxEvent(
          sessionStarted("tracer", {
            id,
            quizId: quiz.quizId,
            mode: "full",
            startedAt: new Date(),
            totalQuestions: 2,
          }),
        );
      const writer = await tracer.startActiveSpan("writer", async (span) => {
        await expect(
          database.db.transaction().execute(async (trx) => {
            await insertEvents(trx, [event("01900000-0000-7000-8000-00000000000a")]);
            throw new Error("the change fails after writing its event");
          }),
        ).rejects.toThrow();
        await database.db
          .transaction()
          .execute((trx) => insertEvents(trx, [event("01900000-0000-7000-8000-00000000000b")]));
        span.end();
        return span.spanContext();
      });
      exporter.reset();
      const target = uniqueTarget();
      const relay = testRelay(database.db, target);
      try {
        expect(await relay.relayBatch()).toEqual({ claimed: 1, published: 1 });
      } finally {
        await relay.stop();
        await deleteStream(target);
      }
      const producers = spans().filter((s) => s.kind === SpanKind.PRODUCER);
      expect(producers).toHaveLength(1);
      expect(producers[0]?.spanContext().traceId).toBe(writer.traceId);
      expect(producers[0]?.parentSpanContext?.spanId).toBe(writer.spanId);
    },
  );
});
