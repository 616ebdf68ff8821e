import { Writable } from "node:stream";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  HealthCheckRequestSchema,
  HealthCheckResponseSchema,
} from "../../gen/grpc/health/v1/health_pb.js";
import {
  ListSessionsRequestSchema,
  ListSessionsResponseSchema,
} from "../../gen/practice/v1/practice_session_service_pb.js";
import { Admission } from "../../src/ops/admission.js";
import { insertQuiz, type QuizFixture } from "../support/fixtures.js";
import { hasPythonGrpc, pythonGrpc, rawCall } from "../support/rpc-exchange.js";
import { RACE_ADMISSION, startTestService, type TestService } from "../support/service.js";

// Every gRPC client, on the service's one port: what each of them gets from
// connect-fastify, over HTTP/2 and HTTP/1.1.

let svc: TestService;
let quiz: QuizFixture;
const lines: string[] = [];
const warnings: Error[] = [];
const onWarning = (w: Error) => warnings.push(w);
const USER = "grpc-clients-user";
const LIST = "/practice.v1.PracticeSessionService/ListSessions";

beforeAll(async () => {
  process.on("warning", onWarning);
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(...String(chunk).split("\n").filter(Boolean));
      done();
    },
  });
  // 40 calls at once: all admitted (admission control has tests of its own).
  svc = await startTestService({
    logger: pino({ level: "info" }, sink),
    admission: new Admission(RACE_ADMISSION),
  });
  quiz = await insertQuiz(svc.db);
  for (let i = 0; i < 3; i++)
    await svc.rest(`${USER}-${i}`, "POST", `/quizzes/${quiz.quizId}/sessions`);
  await svc.rest(USER, "POST", `/quizzes/${quiz.quizId}/sessions`);
});
afterAll(async () => {
  process.off("warning", onWarning);
  await svc?.close();
});

const host = () => new URL(svc.baseUrl).host;
const listBytes = () =>
  Buffer.from(
    toBinary(ListSessionsRequestSchema, create(ListSessionsRequestSchema, { quizId: quiz.quizId })),
  );

/** The page over Connect binary on HTTP/1.1 (Fastify's path): the reference bytes. */
async function pageOverHttp1(): Promise<Buffer> {
  const res = await fetch(`${svc.baseUrl}${LIST}`, {
    method: "POST",
    headers: { ...(await svc.auth(USER)), "content-type": "application/proto" },
    body: listBytes(),
  });
  expect(res.status).toBe(200);
  return Buffer.from(await res.arrayBuffer());
}

describe("gRPC clients over HTTP/2", () => {
  it("gives grpc-js the same page bytes as Connect over HTTP/1.1, its request id and metadata", async () => {
    const client = new grpc.Client(host(), grpc.credentials.createInsecure());
    try {
      const res = await rawCall(client, LIST, listBytes(), {
        ...(await svc.auth(USER)),
        "x-request-id": "grpc-js-call-1",
      });
      expect(res.err).toBeNull();
      expect(res.body).toEqual(await pageOverHttp1());
      expect(fromBinary(ListSessionsResponseSchema, res.body as Buffer).sessions).toHaveLength(1);
      expect(res.headers?.get("x-request-id")).toEqual(["grpc-js-call-1"]);
      const line = lines
        .map((l) => JSON.parse(l))
        .find((l) => l.msg === "request" && l.reqId === "grpc-js-call-1");
      expect(line).toMatchObject({
        user: USER,
        transport: "grpc",
        procedure: LIST,
        code: "ok",
        status: 200,
      });
    } finally {
      client.close();
    }
  });

  it("takes a gzip-compressed request from grpc-js", async () => {
    const client = new grpc.Client(host(), grpc.credentials.createInsecure(), {
      "grpc.default_compression_algorithm": 2, // gzip
    });
    try {
      const res = await rawCall(client, LIST, listBytes(), await svc.auth(USER));
      expect(res.err).toBeNull();
      expect(res.body).toEqual(await pageOverHttp1());
    } finally {
      client.close();
    }
  });

  it("sends errors in the trailers: status and message", async () => {
    const client = new grpc.Client(host(), grpc.credentials.createInsecure());
    try {
      const missing = Buffer.from(
        toBinary(
          ListSessionsRequestSchema,
          create(ListSessionsRequestSchema, { quizId: "999999" }),
        ),
      );
      const res = await rawCall(client, LIST, missing, await svc.auth(USER));
      expect(res.err?.code).toBe(grpc.status.NOT_FOUND);
      expect(res.err?.details).toBe("quiz not found");
      const anonymous = await rawCall(client, LIST, listBytes(), {});
      expect(anonymous.err?.code).toBe(grpc.status.UNAUTHENTICATED);
    } finally {
      client.close();
    }
  });

  it("ends a call past its grpc-timeout with DEADLINE_EXCEEDED", async () => {
    const client = new grpc.Client(host(), grpc.credentials.createInsecure());
    try {
      // A deadline already past when the server reads it: grpc-timeout of 1 ns-ish.
      const res = await rawCall(client, LIST, listBytes(), await svc.auth(USER), {
        deadline: Date.now() + 1,
      });
      expect(res.err?.code).toBe(grpc.status.DEADLINE_EXCEEDED);
    } finally {
      client.close();
    }
  });

  it("notices a cancelled health Watch: the stream ends and is logged as canceled", async () => {
    const client = new grpc.Client(host(), grpc.credentials.createInsecure());
    const metadata = new grpc.Metadata();
    metadata.set("x-request-id", "watch-to-cancel");
    try {
      const call = client.makeServerStreamRequest(
        "/grpc.health.v1.Health/Watch",
        (m: object) => Buffer.from(toBinary(HealthCheckRequestSchema, m as never)),
        (b: Buffer) => fromBinary(HealthCheckResponseSchema, b),
        create(HealthCheckRequestSchema, {}),
        metadata,
      );
      await new Promise((resolve) => call.once("data", resolve));
      const ended = new Promise<grpc.StatusObject>((resolve) => call.on("status", resolve));
      call.on("error", () => {});
      call.cancel();
      expect((await ended).code).toBe(grpc.status.CANCELLED);
      const deadline = Date.now() + 3000;
      const logged = () =>
        lines.map((l) => JSON.parse(l)).find((l) => l.reqId === "watch-to-cancel");
      while (logged() === undefined && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 20));
      }
      expect(logged()).toMatchObject({ transport: "grpc", code: "canceled" });
    } finally {
      client.close();
    }
  });

  it("serves 40 calls in flight at once, gRPC and Connect over HTTP/1.1, without a MaxListenersExceededWarning", async () => {
    const client = new grpc.Client(host(), grpc.credentials.createInsecure());
    try {
      const auth = await svc.auth(USER);
      const results = await Promise.all(
        Array.from({ length: 40 }, () => rawCall(client, LIST, listBytes(), auth)),
      );
      expect(results.map((r) => r.err?.code ?? 0)).toEqual(results.map(() => 0));
      const overHttp1 = await Promise.all(Array.from({ length: 40 }, () => pageOverHttp1()));
      expect(overHttp1).toHaveLength(40);
      // Warnings are emitted on the next tick.
      await new Promise((r) => setTimeout(r, 50));
      expect(warnings.filter((w) => w.name === "MaxListenersExceededWarning")).toEqual([]);
    } finally {
      client.close();
    }
  });

  it.skipIf(!hasPythonGrpc)(
    "answers Python grpcio: the same page bytes, a gzip request, errors in trailers",
    async () => {
      const common = {
        GRPC_TARGET: host(),
        GRPC_PATH: LIST,
        GRPC_TOKEN: await svc.token(USER),
        GRPC_REQUEST_HEX: listBytes().toString("hex"),
      };
      const plain = await pythonGrpc(common);
      expect(plain).toEqual({
        code: "OK",
        body: (await pageOverHttp1()).toString("hex"),
        requestId: "python-call",
      });
      const gzip = await pythonGrpc({ ...common, GRPC_GZIP: "1" });
      expect(gzip.code).toBe("OK");
      const missing = Buffer.from(
        toBinary(
          ListSessionsRequestSchema,
          create(ListSessionsRequestSchema, { quizId: "999999" }),
        ),
      );
      const notFound = await pythonGrpc({ ...common, GRPC_REQUEST_HEX: missing.toString("hex") });
      expect(notFound).toEqual({ code: "NOT_FOUND", details: "quiz not found" });
    },
  );
});
